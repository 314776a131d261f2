// Messages as Discord's client draws them: embeds, buttons, system messages, the thread line
// under a message that started a thread, a thread's starter; and a job's timeline dialog.
"use strict";

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

// A string select menu (component type 3): choosing an option sends it, as Discord's client does.
function renderSelect(c) {
  const options = (c.options || []).map((o) =>
    `<option value="${escapeHtml(o.value)}">${escapeHtml(o.label)}</option>`).join("");
  return `<select class="menu" data-custom-id="${escapeHtml(c.custom_id)}" ${c.disabled ? "disabled" : ""}
    aria-label="${escapeHtml(c.placeholder || "Choose")}"><option value="" selected disabled>${
    escapeHtml(c.placeholder || "Choose")}</option>${options}</select>`;
}

function renderComponents(rows) {
  return (rows || []).filter((row) => row.type === 1).map((row) => `<div class="row">${
    (row.components || []).map((c) => {
      if (c.type === 3) return renderSelect(c);
      if (c.type !== 2) return "";
      const style = BUTTON_STYLES[c.style] || "secondary";
      const label = `${c.emoji && c.emoji.name ? c.emoji.name + " " : ""}${escapeHtml(c.label || "")}`;
      if (c.style === 5) return `<a class="button link" href="${escapeHtml(c.url)}" target="_blank">${label}</a>`;
      return `<button type="button" class="${style}" data-custom-id="${escapeHtml(c.custom_id)}"
        ${c.disabled ? "disabled" : ""}>${label}</button>`;
    }).join("")}</div>`).join("");
}

// The reactions under a message (a bot's acknowledgement of a follow-up, say).
function renderReactions(reactions) {
  if (!reactions || !reactions.length) return "";
  return `<div class="reactions">${reactions.map((r) => `<span class="reaction${r.me ? " mine" : ""}"
    title="${escapeHtml(r.emoji.name || "")}">${escapeHtml(r.emoji.name || "")} ${r.count}</span>`).join("")}</div>`;
}

// The modal a bot opened (interaction response type 9): its text inputs, found in action rows or
// labels, as one form. Returns [{custom_id, label, style, required, max_length, placeholder}].
function modalInputs(components) {
  const found = [];
  const walk = (items, label) => {
    for (const c of items || []) {
      if (c.type === 4) found.push({ ...c, label: c.label || label || c.custom_id });
      else if (c.type === 18) walk([c.component], c.label);
      else walk(c.components, label);
    }
  };
  walk(components);
  return found;
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
  return `${used}${messageBody(msg)}${renderComponents(msg.components)}${renderReactions(msg.reactions)}${
    msg.thread ? threadLine(msg) : ""}${note}`;
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
        <td class="who">${escapeHtml(who(e))}${who(e) === e.actor ? "" : `<br><span class="muted">${
          escapeHtml(e.actor)}</span>`}</td>
        <td class="what">${what}${e.ignored ? ' <span class="muted">(no effect)</span>' : ""}</td>
        <td class="why${e.reason ? "" : " none"}">${e.reason ? escapeHtml(e.reason) : '<span class="muted">—</span>'}</td></tr>`;
    }).join("");
    body.innerHTML = `${job.task ? `<p class="task">${escapeHtml(job.task)}</p>` : ""}
      <table><thead><tr><th>When</th><th>Who</th><th>What</th><th>Why</th></tr></thead>
      <tbody>${rows}</tbody></table>`;
  } catch (err) {
    body.innerHTML = `<p class="muted">${escapeHtml(err.message)}</p>`;
  }
}
