// The message box: plain messages, and slash commands with completion and option fields.
"use strict";

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
