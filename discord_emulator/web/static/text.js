// Discord's text as the page draws it: escaping, markdown, mentions and timestamps (the emoji
// in it are drawn from page.js's ICONS). Loaded before the other scripts of the page.
"use strict";

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => (
    { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

// A small subset of Discord markdown: code, bold, italics, links to <t:..> left as text.
const TIMESTAMP_STYLES = {
  t: { timeStyle: "short" }, T: { timeStyle: "medium" }, d: { dateStyle: "short" },
  D: { dateStyle: "long" }, f: { dateStyle: "long", timeStyle: "short" },
  F: { dateStyle: "full", timeStyle: "short" },
};

function relative(seconds) {
  const delta = seconds - Date.now() / 1000;
  const units = [["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];
  const [unit, size] = units.find(([, s]) => Math.abs(delta) >= s) || units[3];
  return new Intl.RelativeTimeFormat("en", { numeric: "auto" }).format(Math.round(delta / size), unit);
}

function mention(id) {
  const known = page.world ? [...page.world.viewers, page.world.bot] : [];
  const user = known.find((u) => u.id === id);
  return `<span class="mention">@${escapeHtml(user ? user.name : id)}</span>`;
}

function channelMention(id) {
  const all = page.world ? page.world.channels.flatMap((c) => [c, ...c.threads]) : [];
  const channel = all.find((c) => c.id === id);
  const name = channel ? channel.name : id;
  return `<button type="button" class="thread-link inline" data-thread="${id}">#${escapeHtml(name)}</button>`;
}

function jobIdPattern() {
  const source = page.world && page.world.job_id_pattern;
  return source ? new RegExp(`^(?:${source})$`) : null;
}

// Discord markdown, the parts bots use: code, backslash escapes, bold, italics, underline,
// strikethrough, quotes, mentions and <t:..> timestamps. Code spans and escaped characters are
// held aside first so nothing inside them is formatted (as in Discord's parser), in one pass
// from left to right as Discord reads them: "\`code\`" is two escaped backticks around plain
// text (how the bot sends a task's backticks), while inside a code span a backslash is itself.
function markdown(text) {
  const held = [];
  const hold = (html) => `\uE000${held.push(html) - 1}\uE001`;
  const isJob = jobIdPattern();
  let s = String(text || "")
    .replace(/\\([^\sA-Za-z0-9])|`([^`]+)`/g, (_, escaped, code) => hold(escaped !== undefined
      ? escapeHtml(escaped)
      : isJob && isJob.test(code)
        ? `<code class="job-id" data-job="${escapeHtml(code)}" role="button" tabindex="0"
            title="Show this job's timeline">${escapeHtml(code)}</code>`
        : `<code>${escapeHtml(code)}</code>`));
  s = escapeHtml(s)
    .replace(/&lt;t:(-?\d+)(?::([tTdDfFR]))?&gt;/g, (_, sec, style) => hold(timestamp(Number(sec), style)))
    .replace(/&lt;@!?(\d+)&gt;/g, (_, id) => hold(mention(id)))
    .replace(/&lt;#(\d+)&gt;/g, (_, id) => hold(channelMention(id)))
    .replace(/^&gt; (.*)$/gm, '<span class="quote">$1</span>')
    .replace(/\*\*([^*]+)\*\*/g, "<b>$1</b>")
    .replace(/__([^_]+)__/g, "<u>$1</u>")
    .replace(/~~([^~]+)~~/g, "<s>$1</s>")
    .replace(/(^|\W)\*([^*\s][^*]*)\*(?=\W|$)/g, "$1<i>$2</i>")
    .replace(/(^|\W)_([^_\s][^_]*)_(?=\W|$)/g, "$1<i>$2</i>");
  s = icons(s);
  // Held parts may hold others (a timestamp inside nothing else, but keep it general).
  for (let i = 0; i < 3 && s.includes("\uE000"); i++) {
    s = s.replace(/\uE000(\d+)\uE001/g, (_, i) => held[Number(i)]);
  }
  return s;
}

function timestamp(seconds, style) {
  const title = new Date(seconds * 1000).toLocaleString([], TIMESTAMP_STYLES.F);
  const text = style === "R" ? relative(seconds)
    : new Date(seconds * 1000).toLocaleString([], TIMESTAMP_STYLES[style || "f"]);
  return `<time class="ts" data-ts="${seconds}" data-style="${style || "f"}" title="${escapeHtml(title)}">${
    escapeHtml(text)}</time>`;
}

// Relative times stay live, as Discord's client keeps them.
function tickTimes() {
  for (const el of document.querySelectorAll('time.ts[data-style="R"]')) {
    const text = relative(Number(el.dataset.ts));
    if (el.textContent !== text) el.textContent = text;
  }
}

function colorFor(id) {
  const palette = ["#5865f2", "#eb459e", "#3ba55c", "#faa61a", "#ed4245", "#737f8d"];
  return palette[Number(String(id).slice(-3)) % palette.length];
}

function timeOf(iso) {
  return new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}
