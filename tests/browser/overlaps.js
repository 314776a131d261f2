// Every pair of visible, non-nested layout elements that overlap (boxes clipped to their scroll
// containers), and elements that leave the window. Called by test_page.py with a selector.
(selector) => {
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== "hidden";
  };
  const clipped = (el) => {
    const r = el.getBoundingClientRect();
    let box = { l: r.left, t: r.top, r: r.right, b: r.bottom };
    for (let p = el.parentElement; p; p = p.parentElement) {
      const st = getComputedStyle(p);
      if (/(auto|scroll|hidden)/.test(st.overflowX + st.overflowY)) {
        const q = p.getBoundingClientRect();
        box = { l: Math.max(box.l, q.left), t: Math.max(box.t, q.top),
                r: Math.min(box.r, q.right), b: Math.min(box.b, q.bottom) };
      }
    }
    return box;
  };
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "") +
    (el.dataset.id ? `[${el.dataset.id}]` : "");
  const items = [...document.querySelectorAll(selector)].filter(visible)
    .map((el) => [el, clipped(el)]).filter(([, b]) => b.r - b.l > 1 && b.b - b.t > 1);
  const problems = [];
  for (const [el, b] of items) {
    if (b.r > innerWidth + 0.5 || b.l < -0.5) problems.push(`${name(el)} leaves the window`);
  }
  for (let i = 0; i < items.length; i++) {
    for (let j = i + 1; j < items.length; j++) {
      const [a, x] = items[i], [c, y] = items[j];
      if (a.contains(c) || c.contains(a)) continue;
      const w = Math.min(x.r, y.r) - Math.max(x.l, y.l), h = Math.min(x.b, y.b) - Math.max(x.t, y.t);
      if (w > 1 && h > 1) problems.push(`${name(a)} overlaps ${name(c)} (${w.toFixed(0)}x${h.toFixed(0)})`);
    }
  }
  return { checked: items.length, problems };
}
