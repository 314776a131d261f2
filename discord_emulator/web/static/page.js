// The chat page: a Discord-like view of the emulator, updated live from /_emulator/events: its
// state, the panes, the sidebar and the live updates. text.js, messages.js and composer.js are
// loaded first. Ids are snowflakes (beyond 2^53), so they stay strings throughout.
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
  // Which channels' threads are folded away in the sidebar, as the person left them.
  folds: JSON.parse(localStorage.getItem("errand.folds") || "{}"),
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

// ----- emoji ---------------------------------------------------------------------------------

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
  "⏸": svg(":pause_button:", '<rect x="1" y="1" width="18" height="18" rx="4" fill="#5865f2"/><rect x="6" y="5.5" width="2.8" height="9" rx="0.8" fill="#fff"/><rect x="11.2" y="5.5" width="2.8" height="9" rx="0.8" fill="#fff"/>'),
  "❓": svg(":question:", glyph("#e67e22", "?")),
  "⚠": svg(":warning:", '<path d="M10 1.5L19 18H1z" fill="#f0b232"/><text x="10" y="16" text-anchor="middle" font-size="11" font-weight="700" font-family="sans-serif" fill="#1e1f22">!</text>'),
  "🧵": svg(":thread:", '<path d="M3 4.5h14M3 10h14M3 15.5h9" stroke="currentColor" stroke-width="2" stroke-linecap="round"/>'),
  "💬": svg(":speech_balloon:", '<path d="M3 3h14a1 1 0 0 1 1 1v9a1 1 0 0 1-1 1H8l-4 3.5V14H3a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1z" fill="currentColor"/>'),
  "👁": svg(":eye:", '<path d="M1 10s3.5-6 9-6 9 6 9 6-3.5 6-9 6-9-6-9-6z" fill="none" stroke="currentColor" stroke-width="1.6"/><circle cx="10" cy="10" r="2.8" fill="currentColor"/>'),
};
// Every emoji of the table, with or without its variation selector (a new icon is drawn once it
// is in the table).
const ICON_RE = new RegExp(`(${Object.keys(ICONS).join("|")})\uFE0F?`, "gu");

function icons(html) {
  return html.replace(ICON_RE, (_, emoji) => ICONS[emoji]);
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
    this.list.addEventListener("change", (event) => this.onChoose(event));
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
      const reacted = (msg.reactions || []).map((r) => `${r.emoji.name}${r.count}`).join();
      const revision = `${msg.version_count}:${msg.flags}:${msg.loading}:${msg.thread ? msg.thread.name : ""}:${msg.command}:${preview}:${starter}:${reacted}`;
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
      await this.interact(messageId, button.dataset.customId);
    } finally {
      setTimeout(() => { button.disabled = false; }, 800);
    }
  }

  // A select menu's option chosen: sent as Discord's client sends it.
  async onChoose(event) {
    const menu = event.target.closest("select[data-custom-id]");
    if (!menu || !menu.value) return;
    const messageId = menu.closest("[data-id]").dataset.id;
    menu.disabled = true;
    try {
      await this.interact(messageId, menu.dataset.customId, [menu.value]);
    } finally {
      setTimeout(() => { menu.disabled = false; }, 800);
    }
  }

  // A click or a choice; a bot that answers it with a modal gets the modal shown.
  async interact(messageId, customId, values) {
    try {
      const sent = await api("/_emulator/clicks", {
        method: "POST",
        body: JSON.stringify({ user_id: page.userId, message_id: messageId, custom_id: customId, values }),
      });
      const answer = await answered(sent.interaction_id);
      if (answer && answer.response_type === 9 && answer.modal) await openModal(sent.interaction_id, answer.modal);
    } catch (err) {
      this.composer.error(err.message);
    }
  }
}

// The bot's first answer to an interaction, once it came (Discord gives it 3 s).
async function answered(interactionId) {
  for (let i = 0; i < 40; i++) {
    const found = await api(`/_emulator/interactions/${interactionId}`);
    if (found.response_type) return found;
    await new Promise((resolve) => setTimeout(resolve, 75));
  }
  return null;
}

// A bot's modal as a dialog: its text inputs, submitted as the acting user.
async function openModal(interactionId, modal) {
  const dialog = $("#modal");
  const inputs = modalInputs(modal.components);
  $("#modal-title").textContent = modal.title || "";
  $(".modal-body", dialog).innerHTML = inputs.map((c, n) => `<label for="modal-input-${n}">${escapeHtml(c.label)}</label>${
    c.style === 2
      ? `<textarea id="modal-input-${n}" name="${escapeHtml(c.custom_id)}" rows="4"`
      : `<input id="modal-input-${n}" name="${escapeHtml(c.custom_id)}"`} ${c.required === false ? "" : "required"} ${
    c.max_length ? `maxlength="${c.max_length}"` : ""} placeholder="${escapeHtml(c.placeholder || "")}">${
    c.style === 2 ? "</textarea>" : ""}`).join("");
  $(".modal-error", dialog).textContent = "";
  const form = $("form", dialog);
  form.onsubmit = async (event) => {
    event.preventDefault();
    const values = Object.fromEntries(inputs.map((c) => [c.custom_id, form.elements[c.custom_id].value]));
    try {
      await api("/_emulator/modals", {
        method: "POST",
        body: JSON.stringify({ user_id: page.userId, interaction_id: interactionId, values }),
      });
      dialog.close();
    } catch (err) {
      $(".modal-error", dialog).textContent = err.message;
    }
  };
  dialog.showModal();
  const first = $("input, textarea", dialog);
  if (first) first.focus();
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

// ----- sidebar and acting user ---------------------------------------------------------------

function channelLink(ch) {
  const icon = { text: "#", forum: ICONS["💬"], dm: "@", thread: ICONS["🧵"] }[ch.kind];
  const active = Object.values(page.panes).some((p) => p.channelId === ch.id) ? " active" : "";
  return `<a class="${active.trim()}" data-channel="${ch.id}" data-kind="${ch.kind}">${icon} ${escapeHtml(ch.name)}</a>`;
}

// A channel's threads are listed under it, as Discord lists them, behind one row that folds
// them away ("▸ 21 threads") so that channels and DMs stay in view. A channel with more than
// FOLD_AFTER threads starts folded; the person's choice is kept (localStorage). The open
// thread stays listed, folded or not.
const FOLD_AFTER = 3;
const CHEVRON = { open: "▾", folded: "▸" };

function folded(ch) {
  const choice = page.folds[ch.id];
  return choice === undefined ? ch.threads.length > FOLD_AFTER : choice === "folded";
}

function toggleFold(channelId) {
  const ch = page.world.channels.find((c) => c.id === channelId);
  if (!ch) return;
  page.folds[channelId] = folded(ch) ? "open" : "folded";
  localStorage.setItem("errand.folds", JSON.stringify(page.folds));
  renderSidebar();
}

function threadList(ch) {
  if (!ch.threads.length) return "";
  const fold = folded(ch);
  const open = page.panes.thread && page.panes.thread.channelId;
  const shown = fold ? ch.threads.filter((t) => t.id === open) : ch.threads;
  const noun = ch.kind === "forum" ? "post" : "thread";
  const count = `${ch.threads.length} ${noun}${ch.threads.length === 1 ? "" : "s"}`;
  const toggle = `<li class="fold"><button type="button" class="threads-toggle" data-fold="${ch.id}"
    aria-expanded="${!fold}" title="${fold ? "Show" : "Hide"} its ${noun}s">${
    CHEVRON[fold ? "folded" : "open"]} ${count}</button></li>`;
  const threads = shown.map((t) => `<li class="thread${t.archived ? " archived" : ""}">${channelLink(t)}</li>`);
  return `<ul>${toggle}${threads.join("")}</ul>`;
}

function renderSidebar() {
  if (!page.world) return;
  const guildChannels = page.world.channels.filter((c) => c.kind !== "dm");
  const dms = page.world.channels.filter((c) => c.kind === "dm");
  const html = [`<li class="section">Channels</li>`];
  for (const ch of guildChannels) html.push(`<li>${channelLink(ch)}${threadList(ch)}</li>`);
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
    const fold = event.target.closest("[data-fold]");
    if (fold) { toggleFold(fold.dataset.fold); return; }
    const link = event.target.closest("[data-channel]");
    if (!link) return;
    document.body.classList.remove("nav-open");
    const pane = link.dataset.kind === "thread" ? page.panes.thread : page.panes.main;
    await pane.show(link.dataset.channel);
  });
  $("#modal .close").addEventListener("click", () => $("#modal").close());
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
