// The chat page: settings from /v1/models and /ui/config, questions streamed from
// /v1/chat/completions, answers rendered with clickable citations, the key form, errors.
// Performance marks (medcite:first-token-received / -shown) let bench/chat_page.py measure how
// long a streamed token takes from arriving to being on screen.

import { ApiError, call, setKey, streamError } from "./api.js";
import { el } from "./dom.js";
import { PassagePanel } from "./panel.js";
import {
  answerText, evidenceList, gateReport, notConfirmedBanner, notesList, outcomeBadge, outcomeOf, sourceList, toMarkdown,
} from "./render.js";
import { SseParser } from "./sse.js";

const $ = (id) => document.getElementById(id);
const ui = {
  profile: $("profile"), profileInfo: $("profile-info"), sources: $("sources"),
  keyForm: $("key-form"), keyInput: $("key-input"), keyMessage: $("key-message"),
  conversation: $("conversation"), status: $("status"), notice: $("notice"),
  askForm: $("ask-form"), question: $("question"), send: $("send"), stop: $("stop"), newChat: $("new-chat"),
};
const panel = new PassagePanel($("passage"));
const history = []; // earlier turns, sent with each question so follow-ups keep their context
let profiles = new Map(); // id -> {id, description, index, sources}
const pending = []; // what to retry once the user has entered a key
let controller = null; // aborts the answer being streamed

function say(text) {
  ui.status.textContent = text;
}

function notice(text) {
  ui.notice.textContent = text;
  ui.notice.hidden = !text;
}

function askKey(message, retry) {
  if (!pending.includes(retry)) pending.push(retry);
  ui.keyMessage.textContent = message;
  ui.keyForm.hidden = false;
  ui.keyInput.value = "";
  ui.keyInput.focus();
}

async function loadSettings() {
  try {
    const [models, config] = await Promise.all([
      call("/v1/models").then((r) => r.json()),
      call("/ui/config").then((r) => r.json()),
    ]);
    profiles = new Map(config.profiles.map((p) => [p.id, p]));
    const chosen = ui.profile.value;
    ui.profile.replaceChildren(...models.data.map((m) => el("option", { value: m.id }, m.id)));
    if (profiles.has(chosen)) ui.profile.value = chosen;
    showProfile();
    notice("");
  } catch (err) {
    if (err.kind === "auth") askKey(err.message, loadSettings);
    else notice(`${err.message} The page could not load its settings; reload to try again.`);
  }
}

function showProfile() {
  const p = profiles.get(ui.profile.value);
  ui.profileInfo.textContent = p ? `index: ${p.index}${p.description ? ` · ${p.description}` : ""}` : "";
  const boxes = (p ? p.sources : []).map((source) =>
    el("label", { className: "source-choice" }, el("input", { type: "checkbox", name: "source", value: source }), ` ${source}`));
  ui.sources.replaceChildren(ui.sources.querySelector("legend"), ...boxes);
}

function chosenSources() {
  return [...ui.sources.querySelectorAll("input[name=source]:checked")].map((box) => box.value);
}

class Turn {
  constructor(question) {
    this.question = question;
    this.mode = el("p", { className: "mode-line pending" }, "Answering…");
    this.text = el("div", { className: "answer-text streaming", "aria-live": "polite", "aria-label": "Answer text" });
    this.error = el("p", { className: "error", role: "alert", hidden: true });
    this.answer = el("article", { className: "answer", "aria-label": "Answer", "aria-busy": "true" },
      this.mode, this.text, this.error);
    this.item = el("li", { className: "turn" },
      el("p", { className: "question" }, el("span", { className: "who" }, "You: "), question), this.answer);
    ui.conversation.append(this.item);
  }

  add(piece) {
    this.text.append(document.createTextNode(piece));
  }

  fail(message) {
    this.answer.setAttribute("aria-busy", "false");
    this.mode.textContent = this.text.textContent ? "Incomplete" : "No answer";
    if (!this.text.textContent) this.text.hidden = true;
    this.error.textContent = message;
    this.error.hidden = false;
  }

  finish(final) {
    const { citations, evidence, medcite } = final;
    const open = (c, button) => panel.open(c, button, evidence, medcite.sentences);
    const outcome = outcomeOf(medcite);
    const closest = outcome === "closest_lines";
    this.answer.classList.add(`outcome-${outcome}`);
    this.mode.replaceWith(outcomeBadge(medcite));
    const text = answerText(medcite.text, citations, open);
    this.text.replaceWith(...[closest ? notConfirmedBanner() : null, text].filter(Boolean));
    const copy = el("button", { type: "button", className: "copy" }, "Copy as Markdown");
    copy.addEventListener("click", () => copyMarkdown(toMarkdown(this.question, final), this.answer));
    const noAnswer = medcite.mode === "abstained" || medcite.mode === "degraded";
    const sources = sourceList(citations, open, closest ? "Where the closest lines stand" : "Sources");
    this.answer.append(...[sources, ...gateReport(medcite.sentences), notesList(medcite.notes),
      noAnswer && !closest ? evidenceList(evidence) : null, el("div", { className: "actions" }, copy)].filter(Boolean));
    this.answer.setAttribute("aria-busy", "false");
  }
}

async function copyMarkdown(markdown, where) {
  try {
    await navigator.clipboard.writeText(markdown);
    say("Copied the answer as Markdown, with its references.");
  } catch {
    // no clipboard permission: show the text selected, for Ctrl+C
    const box = el("textarea", { className: "markdown", rows: 8, readonly: true, "aria-label": "Answer as Markdown" });
    box.value = markdown;
    where.append(box);
    box.focus();
    box.select();
    say("The clipboard is not available: the Markdown is selected below; press Ctrl+C to copy it.");
  }
}

async function stream(body, turn, signal) {
  const response = await call("/v1/chat/completions", { body, signal });
  const reader = response.body.getReader();
  const parser = new SseParser();
  let final = null;
  let first = true;
  for (;;) {
    const { value, done } = await reader.read();
    const arrived = performance.now();
    for (const event of done ? parser.end() : parser.feed(value)) {
      if (event.data === "[DONE]") return complete(final);
      let data;
      try {
        data = JSON.parse(event.data);
      } catch {
        throw new ApiError("stream", "The server sent an event this page cannot read; the answer is incomplete.");
      }
      if (data.error) throw streamError(data.error);
      const piece = data.choices?.[0]?.delta?.content;
      if (piece) {
        if (first) performance.mark("medcite:first-token-received", { startTime: arrived });
        turn.add(piece);
        if (first) requestAnimationFrame(() => performance.mark("medcite:first-token-shown"));
        first = false;
      }
      if (data.medcite) final = data;
    }
    if (done) return complete(final);
  }
}

function complete(final) {
  if (!final) throw new ApiError("stream", "The answer ended before its sources arrived; it is incomplete.");
  return final;
}

async function ask(question) {
  const turn = new Turn(question);
  const body = { model: ui.profile.value || undefined, stream: true,
    messages: [...history, { role: "user", content: question }] };
  const sources = chosenSources();
  if (sources.length) body.filters = { sources };
  busy(true);
  controller = new AbortController();
  try {
    const final = await stream(body, turn, controller.signal);
    turn.finish(final);
    history.push({ role: "user", content: question }, { role: "assistant", content: final.medcite.text });
    const n = final.citations.length;
    say(`Answer ready (${outcomeOf(final.medcite).replace("_", " ")}, ${n} ${n === 1 ? "source" : "sources"}).`);
  } catch (err) {
    if (err.name === "AbortError") turn.fail("Stopped. Any text above is incomplete.");
    else if (err.kind === "auth") {
      turn.item.remove();
      askKey(err.message, () => ask(question));
    } else turn.fail(err.message || "Something went wrong; try again.");
    say("");
  } finally {
    busy(false);
    controller = null;
  }
}

function busy(on) {
  ui.send.disabled = on;
  ui.stop.disabled = !on;
  if (on) say("Answering…");
}

ui.profile.addEventListener("change", showProfile);
ui.askForm.addEventListener("submit", (e) => {
  e.preventDefault();
  const question = ui.question.value.trim();
  if (!question || controller) return;
  ui.question.value = "";
  ask(question);
});
ui.question.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    ui.askForm.requestSubmit();
  }
});
ui.stop.addEventListener("click", () => controller && controller.abort());
ui.newChat.addEventListener("click", () => {
  history.length = 0;
  ui.conversation.replaceChildren();
  say("New conversation: earlier questions are no longer sent.");
  ui.question.focus();
});
ui.keyForm.addEventListener("submit", (e) => {
  e.preventDefault();
  setKey(ui.keyInput.value.trim());
  ui.keyForm.hidden = true;
  const retries = pending.splice(0);
  ui.question.focus();
  for (const retry of retries) retry();
});
window.addEventListener("error", (e) => notice(`The page hit an error (${e.message}); reload it to continue.`));
window.addEventListener("unhandledrejection", (e) => notice(`The page hit an error (${e.reason}); reload it to continue.`));

loadSettings();
