// The chat page: a Discord-like view of the emulator, updated live from /_emulator/events.
// Ids are snowflakes (beyond 2^53), so they stay strings throughout.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const page = {
  userId: localStorage.getItem("errand.viewer"),
  world: null,
  panes: {},
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

function markdown(text) {
  return escapeHtml(text || "")
    .replace(/&lt;t:(\d+)(?::([tTdDfFR]))?&gt;/g, (_, s, style) => `<time class="ts" data-ts="${s}">${
      style === "R" ? relative(Number(s))
        : new Date(Number(s) * 1000).toLocaleString([], TIMESTAMP_STYLES[style || "f"])}</time>`)
    .replace(/&lt;@!?(\d+)&gt;/g, (_, id) => mention(id))
    .replace(/&lt;#(\d+)&gt;/g, (_, id) => channelMention(id))
    .replace(/^&gt; (.*)$/gm, '<span class="quote">$1</span>')
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<b>$1</b>")
    .replace(/(^|\W)\*([^*]+)\*(?=\W|$)/g, "$1<i>$2</i>")
    .replace(/(^|\W)_([^_]+)_(?=\W|$)/g, "$1<i>$2</i>");
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

function renderMessage(msg) {
  if (msg.type === 18) {
    return `<div>🧵 <b>${escapeHtml(msg.author.username)}</b> started a thread:
      <button type="button" class="thread-link" data-thread="${msg.thread ? msg.thread.id : ""}">
      ${escapeHtml(msg.content)}</button></div>`;
  }
  const author = msg.author;
  const meta = msg.interaction_metadata;
  const used = meta && meta.name
    ? `<div class="used">↳ <b>${escapeHtml(meta.user.username)}</b> used <b>/${escapeHtml(meta.name)}</b></div>` : "";
  const body = msg.loading
    ? `<div class="content">${escapeHtml(author.username)} is thinking…</div>`
    : `<div class="content">${markdown(msg.content)}</div>`;
  const edited = msg.edited_timestamp
    ? `<span class="edited" title="${msg.version_count} versions">(edited)</span>` : "";
  const thread = msg.thread
    ? `<button type="button" class="thread-link" data-thread="${msg.thread.id}">🧵 ${escapeHtml(msg.thread.name)} ›</button>` : "";
  const note = msg.ephemeral
    ? `<div class="ephemeral-note">👁 Only you can see this</div>` : "";
  return `${used}<div class="avatar" style="background:${colorFor(author.id)}">${
    escapeHtml(author.username.slice(0, 1).toUpperCase())}</div>
    <div class="head"><span class="author">${escapeHtml(author.global_name || author.username)}</span>
    ${author.bot ? '<span class="tag">APP</span>' : ""}<time>${timeOf(msg.timestamp)}</time>${edited}</div>
    ${body}${(msg.embeds || []).map(renderEmbed).join("")}${renderComponents(msg.components)}
    ${thread}${note}`;
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
    this.composer = new Composer(this, $(".composer", root));
    this.list.addEventListener("click", (event) => this.onClick(event));
  }

  async show(channelId) {
    if (this.channelId !== channelId) {
      this.channelId = channelId;
      this.list.innerHTML = "";
      this.revisions.clear();
    }
    this.root.hidden = !channelId;
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
        this.list.innerHTML = `<li class="empty">${escapeHtml(err.message)}</li>`;
        this.revisions.clear();
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }

  render(data) {
    const ch = data.channel;
    const prefix = ch.kind === "dm" ? "@" : ch.kind === "thread" ? "🧵 " : ch.kind === "forum" ? "💬 " : "# ";
    $(".pane-title", this.root).textContent = prefix + ch.name;
    $(".composer", this.root).hidden = ch.kind === "forum";
    const stick = this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 40;
    const seen = new Set();
    let previous = null;
    for (const msg of data.messages) {
      seen.add(msg.id);
      const revision = `${msg.version_count}:${msg.flags}:${msg.loading}:${msg.thread ? msg.thread.name : ""}`;
      let el = this.list.querySelector(`[data-id="${msg.id}"]`);
      if (!el) {
        el = document.createElement("li");
        el.dataset.id = msg.id;
        this.list.insertBefore(el, previous ? previous.nextSibling : this.list.firstChild);
      }
      if (this.revisions.get(msg.id) !== revision) {
        const wasDrawn = this.revisions.has(msg.id);
        el.className = "message" + (msg.type === 18 ? " system" : "") +
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
    if (!data.messages.length) {
      this.list.innerHTML = `<li class="empty">${ch.kind === "forum"
        ? "Posts in this forum are listed under it in the sidebar." : "No messages yet. Try /summon."}</li>`;
    }
    if (stick) this.list.scrollTop = this.list.scrollHeight;
  }

  async onClick(event) {
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

// ----- composer with command completion ------------------------------------------------------

class Composer {
  constructor(pane, form) {
    this.pane = pane;
    this.form = form;
    this.input = $(".composer-input", form);
    this.list = $(".suggestions", form);
    this.errorBox = $(".composer-error", form);
    this.items = [];
    this.selected = -1;
    this.input.addEventListener("input", () => this.complete());
    this.input.addEventListener("keydown", (event) => this.onKey(event));
    this.form.addEventListener("submit", (event) => { event.preventDefault(); this.send(); });
    this.list.addEventListener("mousedown", (event) => {
      const li = event.target.closest("li");
      if (li) { event.preventDefault(); this.apply(Number(li.dataset.index)); }
    });
    this.input.addEventListener("blur", () => setTimeout(() => this.hide(), 150));
  }

  error(text) { this.errorBox.textContent = text || ""; }

  hide() { this.list.hidden = true; this.items = []; this.selected = -1; }

  async complete() {
    this.error("");
    const text = this.input.value;
    if (!text.startsWith("/") || !this.pane.channelId) { this.hide(); return; }
    const query = new URLSearchParams({ channel_id: this.pane.channelId, user_id: page.userId, text });
    const { suggestions } = await api(`/_emulator/page/complete?${query}`);
    if (this.input.value !== text) return;
    this.items = suggestions;
    this.selected = -1;
    this.list.innerHTML = suggestions.map((s, i) => `<li role="option" data-index="${i}">
      <span class="label">${escapeHtml(s.label)}</span><span class="description">${escapeHtml(s.description)}</span></li>`).join("");
    this.list.hidden = !suggestions.length;
  }

  apply(index) {
    const item = this.items[index];
    if (!item) return;
    this.input.value = item.text;
    this.input.focus();
    this.complete();
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
    } else if (event.key === "Tab" && open) {
      event.preventDefault(); this.apply(this.selected >= 0 ? this.selected : 0);
    } else if (event.key === "Enter" && open && this.selected >= 0) {
      event.preventDefault(); this.apply(this.selected);
    } else if (event.key === "Escape") {
      this.hide();
    }
  }

  async send() {
    const text = this.input.value.trim();
    if (!text || !this.pane.channelId) return;
    this.hide();
    try {
      await api("/_emulator/page/send", {
        method: "POST",
        body: JSON.stringify({ user_id: page.userId, channel_id: this.pane.channelId, text }),
      });
      this.input.value = "";
      this.error("");
    } catch (err) {
      this.error(err.message);
    }
  }
}

// ----- sidebar and acting user ---------------------------------------------------------------

function channelLink(ch) {
  const icon = { text: "#", forum: "💬", dm: "@", thread: "🧵" }[ch.kind];
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
    for (const pane of Object.values(page.panes)) {
      if (pane.channelId === channelId) pane.refresh();
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

function connect() {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/_emulator/events`);
  ws.onopen = async () => {
    $("#live").classList.add("on");
    // Catch up on whatever happened while disconnected (e.g. the sandbox restarted).
    await loadWorld();
    for (const pane of Object.values(page.panes)) await pane.refresh();
  };
  ws.onmessage = (message) => onEvent(JSON.parse(message.data));
  ws.onclose = () => {
    $("#live").classList.remove("on");
    setTimeout(connect, 1000);
  };
}

// ----- start ---------------------------------------------------------------------------------

async function start() {
  page.panes.main = new Pane($("#main-pane"));
  page.panes.thread = new Pane($("#thread-pane"));
  $("#thread-pane .close").addEventListener("click", () => page.panes.thread.show(null));
  $("#viewer").addEventListener("change", (event) => actAs(event.target.value));
  $("#channels").addEventListener("click", async (event) => {
    const link = event.target.closest("[data-channel]");
    if (!link) return;
    const pane = link.dataset.kind === "thread" ? page.panes.thread : page.panes.main;
    await pane.show(link.dataset.channel);
  });
  await loadWorld();
  const first = page.world.channels.find((c) => c.kind === "text") || page.world.channels[0];
  if (first) await page.panes.main.show(first.id);
  connect();
  document.body.dataset.ready = "true";
}

start();
