// Every word cut across two lines (a column too narrow for it: "reque / ster", "9:28:5 / 0 PM"),
// in the visible text under `selector`. A word is a run of characters between spaces, hyphens,
// slashes and "·"; only a word longer than LONG characters (a URL, a hash) may break, since a
// phone's line may not hold it. (Comparing a word with the width of its box would excuse the
// very fault looked for: a table column squeezed narrower than its words.) Called by the
// browser tests.
(selector) => {
  const LONG = 24;
  const SKIP = new Set(["SCRIPT", "STYLE", "SELECT", "OPTION", "TEXTAREA", "INPUT"]);
  const WORD = /[^\s\u200b\-\/·—–]+/gu;
  const cuts = [];
  let words = 0;
  for (const root of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const parent = node.parentElement;
      if (!parent || SKIP.has(parent.tagName)) continue;
      if (getComputedStyle(parent).visibility === "hidden") continue;
      for (const match of node.data.matchAll(WORD)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
        if (!rects.length) continue; // not laid out (display: none)
        words += 1;
        const lines = new Set(rects.map((r) => Math.round(r.top)));
        if (lines.size > 1 && [...match[0]].length <= LONG) {
          const box = parent.closest("td, li, div, p, header, h2, button, a") || parent;
          const where = box.tagName.toLowerCase() +
            (box.className ? "." + String(box.className).trim().split(/\s+/).join(".") : "");
          cuts.push(`"${match[0]}" cut across ${lines.size} lines in ${where}`);
        }
      }
    }
  }
  return { words, cuts };
}
