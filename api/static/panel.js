// The passage dialog: the cited passage with its span marked, provenance and support scores.
// A modal <dialog>: focus moves into it when it opens, Escape closes it, and focus goes back
// to the [n] button that opened it.

import { append, el, safeLink } from "./dom.js";
import { score, sectionPath } from "./render.js";

export class PassagePanel {
  constructor(dialog) {
    this.dialog = dialog;
    this.opener = null;
    this.body = dialog.querySelector("#passage-body");
    this.title = dialog.querySelector("#passage-title");
    dialog.querySelector("#passage-close").addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => {
      if (this.opener && this.opener.isConnected) this.opener.focus();
      this.opener = null;
    });
  }

  /** Show citation ``c`` of an answer whose evidence and sentences are given. */
  open(c, opener, evidence, sentences) {
    this.opener = opener;
    this.title.textContent = `[${c.marker}] ${c.title}`;
    const hit = evidence.find((h) => h.chunk_id === c.chunk_id);
    const citing = sentences.filter((s) => s.markers.includes(c.marker) && s.status !== "removed");
    this.body.replaceChildren(
      el("dl", { className: "provenance" },
        row("Section", sectionPath(c.section) || "—"),
        row("Source", c.source),
        row("URL", safeLink(c.url)),
        row("Licence", c.license),
        row("Passage", `${c.chunk_id}, characters ${c.start}–${c.end}`),
        row("Support", `${score(c.support)} (how well this passage supports the citing sentence)`)),
      passage(hit ? hit.text : c.quote, c.quote),
      citing.length ? el("section", { className: "citing" }, el("h3", {}, "Cited by"),
        el("ul", {}, citing.map((s) => el("li", {}, el("q", {}, s.text),
          ` — support ${score(s.support)}${s.supported ? "" : ", not supported"}`)))) : null,
    );
    this.dialog.showModal();
  }
}

function row(term, value) {
  return [el("dt", {}, term), el("dd", {}, value)];
}

/** The passage text with the cited span in <mark> (the whole text when they are equal). */
function passage(text, quote) {
  const block = el("blockquote", { className: "passage-text" });
  const at = quote ? text.indexOf(quote) : -1;
  if (at === -1) {
    append(block, text);
    if (quote) append(block, el("p", {}, "Cited span: ", el("mark", {}, quote)));
    return block;
  }
  append(block, text.slice(0, at), el("mark", {}, quote), text.slice(at + quote.length));
  return block;
}
