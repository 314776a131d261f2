// The chat page: a Discord-like view of the emulator, updated live from /_emulator/events.
// Ids are snowflakes (beyond 2^53), so they stay strings throughout.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const page = {
  userId: localStorage.getItem("errand.viewer"),
  world: null,
  panes: {},
  // Ephemeral messages live in the client, as on Discord: those from before this load are not
  // shown again, and "Dismiss message" hides one for good.
  loadedAt: Date.now(),
  dismissed: new Set(),
  online: false,
};

async function api(path, options = {}) {
  const response = await fetch(path, {
    headers: { "Content-Type": "application/json" },
    ...options,
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

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

// The emoji bots post, drawn inline so they need no emoji font (Debian's Chromium ships none);
// each is labelled with its emoji name, as Discord's client labels its emoji images.
const svg = (label, body) =>
  `<svg class="icon" viewBox="0 0 20 20" role="img" aria-label="${label}">${body}</svg>`;
const glyph = (fill, text) => `<circle cx="10" cy="10" r="9" fill="${fill}"/><text x="10" y="14.5"
  text-anchor="middle" font-size="13" font-weight="700" font-family="sans-serif" fill="#fff">${text}</text>`;
const ICONS = {
  "⏳": svg(":hourglass_flowing_sand:", `<circle cx="10" cy="10" r="9" fill="#80848e"/><path d="M6.5 4.5h7M6.5 15.5h7M7
    5.2c0 3.3 6 3 6 4.8s-6 1.5-6 4.8M13 5.2c0 3.3-6 3-6 4.8s6 1.5 6 4.8" fill="none" stroke="#fff"
    stroke-width="1.5" stroke-linecap="round"/>`),
  "▶": svg(":arrow_forward:", '<rect x="1" y="1" width="18" height="18" rx="4" fill="#5865f2"/><path d="M7.5 5.5v9l7-4.5z" fill="#fff"/>'),
  "🛑": svg(":octagonal_sign:", '<path d="M6.3 1h7.4L19 6.3v7.4L13.7 19H6.3L1 13.7V6.3z" fill="#da373c"/><rect x="5" y="8.7" width="10" height="2.6" rx="1" fill="#fff"/>'),
  "✅": svg(":white_check_mark:", '<rect x="1" y="1" width="18" height="18" rx="4" fill="#248046"/><path d="M5.5 10.5l3 3 6-7" fill="none" stroke="#fff" stroke-width="2.4" stroke-linecap="round" stroke-linejoin="round"/>'),
  "❌": svg(":x:", '<path d="M4.5 4.5l11 11M15.5 4.5l-11 11" stroke="#f23f43" stroke-width="3.2" stroke-linecap="round"/>'),
  "⛔": svg(":no_entry:", '<circle cx="10" cy="10" r="9" fill="#da373c"/><rect x="4.5" y="8.7" width="11" height="2.6" rx="1" fill="#fff"/>'),
  "❓": svg(":question:", glyph("#e67e22", "?")),
  "⚠": svg(":warning:", '<path d="M10 1.5L19 18H1z" fill="#f0b232"/><text x="10" y="16" text-anchor="middle" font-size="11" font-weight="700" font-family="sans-serif" fill="#1e1f22">!</text>'),
  "🧵": svg(":thread:", '<path d="M3 4.5h14M3 10h14M3 15.5h9" stroke="currentColor" stroke-width="2" stroke-linecap="round"/>'),
  "💬": svg(":speech_balloon:", '<path d="M3 3h14a1 1 0 0 1 1 1v9a1 1 0 0 1-1 1H8l-4 3.5V14H3a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1z" fill="currentColor"/>'),
  "👁": svg(":eye:", '<path d="M1 10s3.5-6 9-6 9 6 9 6-3.5 6-9 6-9-6-9-6z" fill="none" stroke="currentColor" stroke-width="1.6"/><circle cx="10" cy="10" r="2.8" fill="currentColor"/>'),
};
const ICON_RE = /(⏳|▶|🛑|✅|❌|⛔|❓|⚠|🧵|💬|👁)\uFE0F?/gu;

function icons(html) {
  return html.replace(ICON_RE, (_, emoji) => ICONS[emoji]);
}

function jobIdPattern() {
  const source = page.world && page.world.job_id_pattern;
  return source ? new RegExp(`^(?:${source})$`) : null;
}

// Discord markdown, the parts bots use: code, backslash escapes, bold, italics, underline,
// strikethrough, quotes, mentions and <t:..> timestamps. Code spans and escaped characters are
// held aside first so nothing inside them is formatted (as in Discord's parser).
function markdown(text) {
  const held = [];
  const hold = (html) => `\uE000${held.push(html) - 1}\uE001`;
  const isJob = jobIdPattern();
  let s = String(text || "")
    .replace(/`([^`]+)`/g, (_, code) => hold(isJob && isJob.test(code)
      ? `<code class="job-id" data-job="${escapeHtml(code)}" role="button" tabindex="0"
          title="Show this job's timeline">${escapeHtml(code)}</code>`
      : `<code>${escapeHtml(code)}</code>`))
    .replace(/\\([^\sA-Za-z0-9])/g, (_, c) => hold(escapeHtml(c)));
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

// ----- messages ------------------------------------------------------------------------------

const BUTTON_STYLES = { 1: "primary", 2: "secondary", 3: "success", 4: "danger", 5: "link" };

function renderEmbed(embed) {
  const color = embed.color != null ? `#${embed.color.toString(16).padStart(6, "0")}` : "";
  const fields = (embed.fields || []).map((f) => `
    <div class="field${f.inline ? "" : " wide"}"><div class="name">${markdown(f.name)}</div>
    <div class="value">${markdown(f.value)}</div></div>`).join("");
  return `<div class="embed"${color ? ` style="border-left-color:${color}"` : ""}>
    ${embed.author ? `<div class="footer">${escapeHtml(embed.author.name)}</div>` : ""}
    ${embed.title ? `<div class="title">${markdown(embed.title)}</div>` : ""}
    ${embed.description ? `<div class="description">${markdown(embed.description)}</div>` : ""}
    ${fields ? `<div class="fields">${fields}</div>` : ""}
    ${embed.footer ? `<div class="footer">${markdown(embed.footer.text)}</div>` : ""}
  </div>`;
}

function renderComponents(rows) {
  return (rows || []).filter((row) => row.type === 1).map((row) => `<div class="row">${
    (row.components || []).filter((c) => c.type === 2).map((c) => {
      const style = BUTTON_STYLES[c.style] || "secondary";
      const label = `${c.emoji && c.emoji.name ? c.emoji.name + " " : ""}${escapeHtml(c.label || "")}`;
      if (c.style === 5) return `<a class="button link" href="${escapeHtml(c.url)}" target="_blank">${label}</a>`;
      return `<button type="button" class="${style}" data-custom-id="${escapeHtml(c.custom_id)}"
        ${c.disabled ? "disabled" : ""}>${label}</button>`;
    }).join("")}</div>`).join("");
}

// Discord's system messages, each one line (Message resource: Message Types).
function systemLine(msg) {
  const who = `<b>${escapeHtml(msg.author.global_name || msg.author.username)}</b>`;
  const target = msg.mentions && msg.mentions[0] ? mention(msg.mentions[0].id) : "someone";
  const ref = msg.message_reference || {};
  const lines = {
    1: `${who} added ${target} to the thread.`,
    2: `${who} removed ${target} from the thread.`,
    4: `${who} changed the thread name: <b>${escapeHtml(msg.content)}</b>`,
    6: `${who} pinned a message to this channel.`,
    7: `${who} joined the server.`,
    18: `${ICONS["🧵"]} ${who} started a thread: <button type="button" class="thread-link"
      data-thread="${escapeHtml(ref.channel_id || "")}"><span class="thread-name">${
      escapeHtml(msg.content)}</span></button>`,
  };
  return `<div class="system-line">${lines[msg.type] || escapeHtml(msg.content)}</div>`;
}

const SYSTEM_TYPES = new Set([1, 2, 4, 6, 7, 18]);

// What Discord's client shows under a message that started a thread: a link to the thread and
// the thread's newest message, one line, as the bot (or a person) wrote it.
function threadLine(msg) {
  const preview = msg.thread_preview;
  const latest = preview ? `<span class="thread-preview"><b>${escapeHtml(
    preview.author.global_name || preview.author.username)}</b> ${markdown(preview.content)}</span>` : "";
  return `<div class="thread-line"><button type="button" class="thread-link" data-thread="${msg.thread.id}">${
    ICONS["🧵"]}<span class="thread-name">${escapeHtml(msg.thread.name)}</span> ›</button>${latest}</div>`;
}

function messageBody(msg) {
  const author = msg.author;
  const edited = msg.edited_timestamp
    ? `<span class="edited" title="${msg.version_count} versions">(edited)</span>` : "";
  const body = msg.loading
    ? `<div class="content">${escapeHtml(author.username)} is thinking…</div>`
    : `<div class="content">${markdown(msg.content)}</div>`;
  return `<div class="avatar" style="background:${colorFor(author.id)}">${
    escapeHtml(author.username.slice(0, 1).toUpperCase())}</div>
    <div class="head"><span class="author">${escapeHtml(author.global_name || author.username)}</span>
    ${author.bot ? '<span class="tag">APP</span>' : ""}<time>${timeOf(msg.timestamp)}</time>${edited}</div>
    ${body}${(msg.embeds || []).map(renderEmbed).join("")}`;
}

// A thread started from a message opens with it (THREAD_STARTER_MESSAGE refers to it).
function renderStarter(msg) {
  const starter = msg.referenced_message;
  if (!starter) return `<div class="system-line">The message this thread started from was deleted.</div>`;
  return `<div class="message">${messageBody(starter)}</div>`;
}

function renderMessage(msg) {
  if (SYSTEM_TYPES.has(msg.type)) return systemLine(msg);
  if (msg.type === 21) return renderStarter(msg);
  const meta = msg.interaction_metadata;
  const command = msg.command || (meta && meta.name);
  const used = meta && command
    ? `<div class="used">↳ <b>${escapeHtml(meta.user.username)}</b> used <b class="command">/${escapeHtml(command)}</b></div>` : "";
  const note = msg.ephemeral
    ? `<div class="ephemeral-note">${ICONS["👁"]} Only you can see this ·
       <button type="button" class="dismiss" data-dismiss="${msg.id}">Dismiss message</button></div>` : "";
  return `${used}${messageBody(msg)}${renderComponents(msg.components)}${msg.thread ? threadLine(msg) : ""}${note}`;
}

// Whether the acting user sees a message now: an ephemeral one only in the session it arrived
// in (Discord drops them on reload) and until dismissed.
function shown(msg) {
  if (!msg.ephemeral) return true;
  return !page.dismissed.has(msg.id) && Date.parse(msg.timestamp) >= page.loadedAt;
}

// ----- the timeline: the application's own record of a job, shown as given ------------------

function who(event) {
  const id = String(event.by || "").replace(/^discord:/, "");
  const known = page.world ? [...page.world.viewers, page.world.bot] : [];
  const user = known.find((u) => u.id === id);
  return user ? user.name : (event.by && !/^\d+$/.test(id) ? event.by : event.actor);
}

async function openTimeline(jobId) {
  const dialog = $("#timeline");
  const body = $(".timeline-body", dialog);
  $("#timeline-title").textContent = `Job ${jobId}`;
  body.innerHTML = `<p class="muted">Loading…</p>`;
  if (!dialog.open) dialog.showModal();
  try {
    const job = await api(`/_emulator/page/jobs/${encodeURIComponent(jobId)}?user_id=${page.userId}`);
    $("#timeline-title").innerHTML = `Job <code>${escapeHtml(job.id)}</code> · ${escapeHtml(job.kind)}`;
    const rows = job.events.map((e) => {
      const at = Date.parse(e.at) / 1000;
      const what = `${e.from ? `${escapeHtml(e.from)} → ` : ""}<b>${escapeHtml(e.to)}</b>`;
      return `<tr class="event${e.ignored ? " ignored" : ""}">
        <td class="when">${timestamp(Math.floor(at), "T")}<br><span class="muted">${
          new Date(e.at).toLocaleDateString()}</span></td>
        <td class="who">${escapeHtml(who(e))}<br><span class="muted">${escapeHtml(e.actor)}</span></td>
        <td class="what">${what}${e.ignored ? ' <span class="muted">(no effect)</span>' : ""}</td>
        <td class="why">${e.reason ? escapeHtml(e.reason) : '<span class="muted">—</span>'}</td></tr>`;
    }).join("");
    body.innerHTML = `${job.task ? `<p class="task">${escapeHtml(job.task)}</p>` : ""}
      <table><thead><tr><th>When</th><th>Who</th><th>What</th><th>Why</th></tr></thead>
      <tbody>${rows}</tbody></table>`;
  } catch (err) {
    body.innerHTML = `<p class="muted">${escapeHtml(err.message)}</p>`;
  }
}

// ----- panes ---------------------------------------------------------------------------------

class Pane {
  constructor(root) {
    this.root = root;
    this.name = root.dataset.pane;
    this.list = $(".messages", root);
    this.channelId = null;
    this.revisions = new Map();
    this.refreshing = null;
    // Follow the newest message until the user scrolls up (and again once back at the bottom).
    this.stuck = true;
    this.composer = new Composer(this, $(".composer", root));
    this.list.addEventListener("click", (event) => this.onClick(event));
    this.list.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target.closest("[data-job]")) this.onClick(event);
    });
    this.list.addEventListener("scroll", () => {
      // Scroll events arrive a frame late: one from our own follow() may see a taller list
      // (the thread pane opened meanwhile) and must not count as the user scrolling up.
      if (this.list.scrollTop === this.ownScroll) return;
      this.stuck = this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 40;
    });
    // A pane that changes size (the thread pane opening beside it, a narrower window) re-wraps
    // its messages; keep the newest in view.
    new ResizeObserver(() => this.follow()).observe(this.list);
    // ...and so does anything drawn into it later (a thread's newest message, a dismissed answer).
    new MutationObserver(() => this.follow()).observe(this.list, { childList: true, subtree: true });
  }

  follow() {
    if (!this.stuck) return;
    this.list.scrollTop = this.list.scrollHeight;
    this.ownScroll = this.list.scrollTop;
  }

  async show(channelId) {
    if (this.channelId !== channelId) {
      this.channelId = channelId;
      this.list.innerHTML = "";
      this.revisions.clear();
      this.stuck = true;
    }
    this.root.hidden = !channelId;
    if (this.name === "thread") $("#app").classList.toggle("thread-open", Boolean(channelId));
    saveLocation();
    if (channelId) await this.refresh();
    renderSidebar();
  }

  // Coalesce bursts of events into one fetch, and redraw only messages that changed.
  refresh() {
    if (!this.channelId) return Promise.resolve();
    if (this.refreshing) { this.again = true; return this.refreshing; }
    this.refreshing = (async () => {
      try {
        do {
          this.again = false;
          const data = await api(`/_emulator/page/channels/${this.channelId}/messages?user_id=${page.userId}`);
          this.render(data);
        } while (this.again);
      } catch (err) {
        if (page.online) {
          this.list.innerHTML = `<li class="empty">${escapeHtml(err.message)}</li>`;
          this.revisions.clear();
        }
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }

  render(data) {
    const ch = data.channel;
    const prefix = ch.kind === "dm" ? "@" : ch.kind === "thread" ? ICONS["🧵"] + " " : ch.kind === "forum" ? ICONS["💬"] + " " : "# ";
    $(".pane-title", this.root).innerHTML = prefix + escapeHtml(ch.name) +
      (ch.archived ? ' <span class="muted">(archived)</span>' : "");
    // A forum takes no plain messages, but a command run in it (/summon) starts a post.
    this.composer.input.placeholder = ch.kind === "forum"
      ? "/summon here starts a post in this forum" : this.name === "thread"
        ? "Message the thread, or / for commands" : "Message, or / for commands";
    const messages = data.messages.filter(shown);
    const seen = new Set();
    let previous = null;
    for (const msg of messages) {
      seen.add(msg.id);
      const preview = msg.thread_preview ? `${msg.thread_preview.author.id}:${msg.thread_preview.content}` : "";
      // A thread's starter is drawn from the message it refers to, which may change meanwhile.
      const starter = msg.referenced_message && msg.type === 21 ? msg.referenced_message.edited_timestamp : "";
      const revision = `${msg.version_count}:${msg.flags}:${msg.loading}:${msg.thread ? msg.thread.name : ""}:${msg.command}:${preview}:${starter}`;
      let el = this.list.querySelector(`[data-id="${msg.id}"]`);
      if (!el) {
        el = document.createElement("li");
        el.dataset.id = msg.id;
        this.list.insertBefore(el, previous ? previous.nextSibling : this.list.firstChild);
      }
      if (this.revisions.get(msg.id) !== revision) {
        const wasDrawn = this.revisions.has(msg.id);
        // A thread's starter is drawn as the message it refers to, not as a message of its own.
        el.className = msg.type === 21 ? "starter" : "message" + (SYSTEM_TYPES.has(msg.type) ? " system" : "") +
          (msg.ephemeral ? " ephemeral" : "") + (msg.loading ? " loading" : "");
        el.dataset.author = msg.author.id;
        el.dataset.versions = msg.version_count;
        el.innerHTML = renderMessage(msg);
        if (wasDrawn) { void el.offsetWidth; el.classList.add("flash"); }
        this.revisions.set(msg.id, revision);
      }
      previous = el;
    }
    for (const el of [...this.list.children]) {
      if (!el.dataset.id || !seen.has(el.dataset.id)) { el.remove(); this.revisions.delete(el.dataset.id); }
    }
    // (Forum post cards are drawn again below, after the messages.)
    if (ch.kind === "forum") {
      this.renderForum(ch);
    } else if (!messages.length) {
      this.list.innerHTML = `<li class="empty">No messages yet. Try /summon.</li>`;
    }
    this.follow();
  }

  // A forum's posts are its threads: list them as cards, as Discord does, instead of a dead end.
  renderForum(ch) {
    for (const el of this.list.querySelectorAll(".forum-post, .empty")) el.remove();
    const forum = page.world && page.world.channels.find((c) => c.id === ch.id);
    const posts = forum ? forum.threads : [];
    const html = posts.length
      ? `<li class="section-title forum-post">Posts</li>` + posts.map((t) => `<li class="forum-post">
        <button type="button" class="thread-link" data-thread="${t.id}">${ICONS["🧵"]}<span class="thread-name">${
          escapeHtml(t.name)}</span> ›</button>${t.archived ? ' <span class="muted">archived</span>' : ""}</li>`).join("")
      : `<li class="empty">No posts yet: a /summon here starts one (each job gets its own post).</li>`;
    this.list.insertAdjacentHTML("beforeend", html);
  }

  async onClick(event) {
    const dismiss = event.target.closest("[data-dismiss]");
    if (dismiss) {
      page.dismissed.add(dismiss.dataset.dismiss);
      const li = dismiss.closest("li");
      this.revisions.delete(li.dataset.id);
      li.remove();
      return;
    }
    const jobId = event.target.closest("[data-job]");
    if (jobId) {
      await openTimeline(jobId.dataset.job);
      return;
    }
    const threadButton = event.target.closest("[data-thread]");
    if (threadButton && threadButton.dataset.thread) {
      const id = threadButton.dataset.thread;
      const isChannel = page.world && page.world.channels.some((c) => c.id === id);
      await (isChannel ? page.panes.main : page.panes.thread).show(id);
      return;
    }
    const button = event.target.closest("button[data-custom-id]");
    if (!button) return;
    const messageId = button.closest("[data-id]").dataset.id;
    button.disabled = true;
    try {
      await api("/_emulator/clicks", {
        method: "POST",
        body: JSON.stringify({ user_id: page.userId, message_id: messageId, custom_id: button.dataset.customId }),
      });
    } catch (err) {
      this.composer.error(err.message);
    } finally {
      setTimeout(() => { button.disabled = false; }, 800);
    }
  }
}

// The open channel and thread live in the URL, so a reload (or a shared link) reopens them.
function saveLocation() {
  const main = page.panes.main && page.panes.main.channelId;
  const thread = page.panes.thread && page.panes.thread.channelId;
  if (!main) return;
  const hash = `#/channels/${main}${thread ? `/threads/${thread}` : ""}`;
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

function readLocation() {
  const m = /^#\/channels\/(\d+)(?:\/threads\/(\d+))?$/.exec(location.hash);
  return m ? { main: m[1], thread: m[2] || null } : { main: null, thread: null };
}

// ----- composer with command completion ------------------------------------------------------

// Choosing a command from the suggestions opens Discord-like option fields: one field per
// option (required ones first), each with its own suggestions (declared choices, or the bot's
// autocomplete for that option, given the other fields' values). Typing `name:value` on the
// line works too; changing the line closes the fields.
class Composer {
  constructor(pane, form) {
    this.pane = pane;
    this.form = form;
    this.input = $(".composer-input", form);
    this.list = $(".suggestions", form);
    this.errorBox = $(".composer-error", form);
    this.fields = document.createElement("div");
    this.fields.className = "option-fields";
    this.fields.hidden = true;
    form.insertBefore(this.fields, this.input);
    this.command = null; // {path, options, line} while the option fields are open
    this.field = null; // the option field whose suggestions are shown
    this.items = [];
    this.selected = -1;
    this.edits = 0; // every change to the line or an option field, to tell a new line from a sent one
    this.form.addEventListener("input", () => { this.edits += 1; });
    this.input.addEventListener("input", () => {
      if (this.command && this.input.value !== this.command.line) this.closeFields();
      this.complete();
    });
    this.input.addEventListener("keydown", (event) => this.onKey(event));
    this.fields.addEventListener("input", (event) => this.completeField(event.target));
    this.fields.addEventListener("focusin", (event) => this.completeField(event.target));
    this.fields.addEventListener("keydown", (event) => this.onKey(event));
    this.form.addEventListener("submit", (event) => { event.preventDefault(); this.send(); });
    this.list.addEventListener("mousedown", (event) => {
      const li = event.target.closest("li");
      if (li) { event.preventDefault(); this.apply(Number(li.dataset.index)); }
    });
    this.form.addEventListener("focusout", () => setTimeout(() => {
      if (!this.form.contains(document.activeElement)) this.hide();
    }, 150));
  }

  error(text) { this.errorBox.textContent = text || ""; }

  hide() { this.list.hidden = true; this.items = []; this.selected = -1; }

  show(items) {
    this.items = items;
    this.selected = -1;
    this.list.innerHTML = items.map((s, i) => `<li role="option" data-index="${i}">
      <span class="label">${escapeHtml(s.label)}</span><span class="description">${escapeHtml(s.description || "")}</span></li>`).join("");
    this.list.hidden = !items.length;
  }

  async complete() {
    this.error("");
    const text = this.input.value;
    // Suggestions answer one state of the line: drop them at once when it changes (the cursor
    // moved on to another option), and ignore answers to older states.
    const seq = (this.seq = (this.seq || 0) + 1);
    this.field = null;
    this.hide();
    if (!text.startsWith("/") || !this.pane.channelId || this.command) return;
    const query = new URLSearchParams({ channel_id: this.pane.channelId, user_id: page.userId, text });
    let suggestions;
    try {
      ({ suggestions } = await api(`/_emulator/page/complete?${query}`));
    } catch (err) {
      return;
    }
    if (seq !== this.seq || this.input.value !== text) return;
    this.show(suggestions);
  }

  async commandOptions(path) {
    const query = new URLSearchParams({ channel_id: this.pane.channelId });
    const { commands } = await api(`/_emulator/page/commands?${query}`);
    return commands[path] || null;
  }

  async apply(index) {
    const item = this.items[index];
    if (!item) return;
    if (this.field && item.value !== undefined) {
      const field = this.field;
      field.value = item.value;
      field.focus();
      if (item.value.endsWith("=")) this.completeField(field); // a parameter to continue
      else this.hide();
      return;
    }
    this.input.value = item.text;
    this.input.focus();
    const path = /^\/([a-z0-9_-]+(?: [a-z0-9_-]+)*) $/.exec(item.text);
    const options = path ? await this.commandOptions(path[1]).catch(() => null) : null;
    if (options && options.length && this.input.value === item.text) {
      this.openFields(path[1], options, item.text);
    } else {
      this.complete();
    }
  }

  openFields(path, options, line) {
    const ordered = [...options].sort((a, b) => Boolean(b.required) - Boolean(a.required));
    this.command = { path, options: ordered, line };
    this.hide();
    this.fields.innerHTML = ordered.map((o) => `<label class="option-field${o.required ? " required" : ""}">
      <span class="option-name">${escapeHtml(o.name)}</span>
      <input class="option-input" data-option="${escapeHtml(o.name)}" spellcheck="false"
        placeholder="${escapeHtml(o.description || "")}${o.required ? "" : " (optional)"}"></label>`).join("");
    this.fields.hidden = false;
    $("input", this.fields).focus();
  }

  closeFields() {
    this.command = null;
    this.field = null;
    this.fields.hidden = true;
    this.fields.innerHTML = "";
    this.hide();
  }

  fieldValues() {
    const values = {};
    for (const input of this.fields.querySelectorAll("input[data-option]")) {
      values[input.dataset.option] = input.value;
    }
    return values;
  }

  // One field's suggestions: its declared choices, or the bot's autocomplete for it.
  async completeField(input) {
    if (!this.command || !input || !input.dataset || !input.dataset.option) return;
    this.error("");
    const seq = (this.seq = (this.seq || 0) + 1);
    this.field = input;
    this.hide();
    const option = this.command.options.find((o) => o.name === input.dataset.option);
    const typed = input.value;
    if (option.choices && option.choices.length) {
      this.show(option.choices
        .filter((c) => String(c.name).toLowerCase().includes(typed.toLowerCase()))
        .map((c) => ({ label: String(c.name), value: String(c.value), description: option.name })));
      return;
    }
    if (!option.autocomplete) return;
    // The line the bot's autocomplete reads: the other fields, then this one (focused) last.
    const others = Object.entries(this.fieldValues())
      .filter(([name, value]) => name !== option.name && value.trim())
      .map(([name, value]) => ` ${name}:${value.trim()}`).join("");
    const base = `/${this.command.path}${others} ${option.name}:`;
    const query = new URLSearchParams({
      channel_id: this.pane.channelId, user_id: page.userId, text: base + typed,
    });
    let suggestions;
    try {
      ({ suggestions } = await api(`/_emulator/page/complete?${query}`));
    } catch (err) {
      return;
    }
    if (seq !== this.seq || input.value !== typed || this.field !== input) return;
    this.show(suggestions.filter((s) => s.text.startsWith(base)).map((s) => ({
      label: s.label, description: s.description, value: s.text.slice(base.length).replace(/ $/, ""),
    })));
  }

  highlight(index) {
    this.selected = index;
    [...this.list.children].forEach((li, i) => li.classList.toggle("selected", i === index));
  }

  onKey(event) {
    const open = !this.list.hidden && this.items.length;
    if (event.key === "ArrowDown" && open) {
      event.preventDefault(); this.highlight((this.selected + 1) % this.items.length);
    } else if (event.key === "ArrowUp" && open) {
      event.preventDefault(); this.highlight((this.selected - 1 + this.items.length) % this.items.length);
    } else if (event.key === "Tab" && open && !event.shiftKey) {
      event.preventDefault(); this.apply(this.selected >= 0 ? this.selected : 0);
    } else if (event.key === "Enter" && open && this.selected >= 0) {
      event.preventDefault(); this.apply(this.selected);
    } else if (event.key === "Enter" && event.target !== this.input) {
      event.preventDefault(); this.send();
    } else if (event.key === "Escape") {
      if (open) this.hide(); else if (this.command) { this.closeFields(); this.input.focus(); }
    }
  }

  async send() {
    const text = this.input.value.trim();
    if (!text || !this.pane.channelId) return;
    if (!page.online) { this.error("Not connected to the sandbox: nothing was sent."); return; }
    this.seq = (this.seq || 0) + 1;
    this.hide();
    const body = { user_id: page.userId, channel_id: this.pane.channelId, text };
    if (this.command) Object.assign(body, { text: `/${this.command.path}`, options: this.fieldValues() });
    const edits = this.edits;
    try {
      await api("/_emulator/page/send", { method: "POST", body: JSON.stringify(body) });
      // Clear what was sent, not what was typed since (even the same command again): a line
      // written while this one was on its way is the person's next message.
      if (this.edits === edits) {
        this.closeFields();
        this.input.value = "";
      }
      this.error("");
    } catch (err) {
      this.error(err.message);
    }
  }
}

// ----- sidebar and acting user ---------------------------------------------------------------

function channelLink(ch) {
  const icon = { text: "#", forum: ICONS["💬"], dm: "@", thread: ICONS["🧵"] }[ch.kind];
  const active = Object.values(page.panes).some((p) => p.channelId === ch.id) ? " active" : "";
  return `<a class="${active.trim()}" data-channel="${ch.id}" data-kind="${ch.kind}">${icon} ${escapeHtml(ch.name)}</a>`;
}

function renderSidebar() {
  if (!page.world) return;
  const guildChannels = page.world.channels.filter((c) => c.kind !== "dm");
  const dms = page.world.channels.filter((c) => c.kind === "dm");
  const html = [`<li class="section">Channels</li>`];
  for (const ch of guildChannels) {
    const threads = ch.threads.map((t) => `<li class="thread${t.archived ? " archived" : ""}">${channelLink(t)}</li>`).join("");
    html.push(`<li>${channelLink(ch)}${threads ? `<ul>${threads}</ul>` : ""}</li>`);
  }
  if (dms.length) html.push(`<li class="section">Direct messages</li>`);
  for (const dm of dms) html.push(`<li>${channelLink(dm)}</li>`);
  $("#channels").innerHTML = html.join("");
}

async function loadWorld() {
  const query = page.userId ? `?user_id=${page.userId}` : "";
  try {
    page.world = await api(`/_emulator/page/world${query}`);
  } catch (err) {
    page.userId = null;
    page.world = await api("/_emulator/page/world");
  }
  page.userId = page.world.user_id;
  $("#guild-name").textContent = page.world.title;
  $("#viewer").innerHTML = page.world.viewers.map((v) => `<option value="${v.id}"${
    v.id === page.userId ? " selected" : ""}>${escapeHtml(v.name)}</option>`).join("");
  renderSidebar();
}

async function actAs(userId) {
  page.userId = userId;
  localStorage.setItem("errand.viewer", userId);
  await loadWorld();
  const visible = new Set(page.world.channels.flatMap((c) => [c.id, ...c.threads.map((t) => t.id)]));
  const main = page.panes.main;
  if (!visible.has(main.channelId)) await main.show(page.world.channels[0].id);
  for (const pane of Object.values(page.panes)) await pane.refresh();
}

// ----- live updates --------------------------------------------------------------------------

const MESSAGE_EVENTS = new Set(["message_create", "message_update", "message_delete"]);
const CHANNEL_EVENTS = new Set(["thread_create", "thread_update", "channel_create", "channel_update"]);
let worldTimer = null;

function onEvent(event) {
  if (MESSAGE_EVENTS.has(event.kind)) {
    const channelId = event.extra.channel_id || event.data.channel_id;
    // A thread's newest message shows under the message that started it, in the parent.
    const thread = page.world && page.world.channels.flatMap((c) => c.threads).find((t) => t.id === channelId);
    const parentId = thread ? thread.parent_id : null;
    for (const pane of Object.values(page.panes)) {
      if (pane.channelId === channelId || pane.channelId === parentId) pane.refresh();
    }
    if (event.kind === "message_update") {
      // A thread's name shows on its starter message; other panes may show the parent.
      for (const pane of Object.values(page.panes)) if (pane.channelId !== channelId) pane.refresh();
    }
  } else if (CHANNEL_EVENTS.has(event.kind) || event.kind === "restart") {
    clearTimeout(worldTimer);
    worldTimer = setTimeout(async () => {
      await loadWorld();
      for (const pane of Object.values(page.panes)) pane.refresh();
    }, 100);
  }
}

function setOnline(online) {
  page.online = online;
  $("#live").classList.toggle("on", online);
  $("#live").title = online ? "Live updates" : "Disconnected: reconnecting";
  $("#offline").hidden = online;
  document.body.classList.toggle("offline", !online);
  for (const input of document.querySelectorAll(".composer-input")) input.disabled = !online;
}

function connect() {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/_emulator/events`);
  ws.onopen = async () => {
    setOnline(true);
    // Catch up on whatever happened while disconnected (e.g. the sandbox restarted).
    await loadWorld();
    for (const pane of Object.values(page.panes)) await pane.refresh();
    page.markOpen();
  };
  ws.onmessage = (message) => onEvent(JSON.parse(message.data));
  ws.onclose = () => {
    setOnline(false);
    setTimeout(connect, 1000);
  };
}

// ----- start ---------------------------------------------------------------------------------

async function start() {
  page.panes.main = new Pane($("#main-pane"));
  page.panes.thread = new Pane($("#thread-pane"));
  $("#thread-pane .close").addEventListener("click", () => page.panes.thread.show(null));
  $("#main-pane .menu").addEventListener("click", () => document.body.classList.toggle("nav-open"));
  $("#viewer").addEventListener("change", (event) => actAs(event.target.value));
  $("#channels").addEventListener("click", async (event) => {
    const link = event.target.closest("[data-channel]");
    if (!link) return;
    document.body.classList.remove("nav-open");
    const pane = link.dataset.kind === "thread" ? page.panes.thread : page.panes.main;
    await pane.show(link.dataset.channel);
  });
  const timeline = $("#timeline");
  $(".close", timeline).addEventListener("click", () => timeline.close());
  timeline.addEventListener("click", (event) => { if (event.target === timeline) timeline.close(); });
  timeline.addEventListener("click", (event) => {
    const thread = event.target.closest("[data-thread]");
    if (thread) { timeline.close(); page.panes.thread.show(thread.dataset.thread); }
  });
  await loadWorld();
  const all = page.world.channels.flatMap((c) => [c, ...c.threads]);
  const saved = readLocation();
  const first = page.world.channels.find((c) => c.id === saved.main) ||
    page.world.channels.find((c) => c.kind === "text") || page.world.channels[0];
  if (first) await page.panes.main.show(first.id);
  if (saved.thread && all.some((c) => c.id === saved.thread)) await page.panes.thread.show(saved.thread);
  setInterval(tickTimes, 1000);
  const opened = new Promise((resolve) => { page.markOpen = resolve; });
  connect();
  await opened;
  document.body.dataset.ready = "true";
}

start();
