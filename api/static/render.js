// One finished answer as DOM: outcome badge, text with [n] buttons, sources, what the support gate
// left out or flagged, notes, and the passages found when there is no answer. Also the answer
// as Markdown with a numbered reference list.

import { append, el, safeLink } from "./dom.js";

// What the user is told, by the answer's outcome (medcite.outcome; an older server sends only the
// mode, read through LEGACY): a badge, a class for its colour, and one sentence.
export const OUTCOMES = {
  answer: ["Answer", "Answered from the sources below; each [n] opens the exact line it rests on."],
  closest_lines: ["Not confirmed", "The closest lines of the sources: not an answer."],
  nothing_relevant: ["Nothing relevant", "No passage found is about this question, and medcite does not answer from memory."],
  degraded: ["Not an answer", "The model could not answer; the passages found are listed below, unsummarised."],
  closed_book: ["Closed-book", "Answered from the model's memory, without sources: nothing here is checked against a source."],
};
const LEGACY = { rag: "answer", abstained: "nothing_relevant", degraded: "degraded", "closed-book": "closed_book" };

export function outcomeOf(medcite) {
  return medcite.outcome || LEGACY[medcite.mode] || "unknown";
}

/** The badge and its sentence; a quoted answer also says how likely its best line is to answer. */
export function outcomeBadge(medcite) {
  const outcome = outcomeOf(medcite);
  const known = Object.hasOwn(OUTCOMES, outcome);
  const [label, text] = known ? OUTCOMES[outcome] : [medcite.mode, "An answer this page does not know how to show."];
  const line = el("p", { className: "mode-line" },
    el("span", { className: `mode mode-${known ? outcome : "unknown"}`, "data-mode": medcite.mode, "data-outcome": outcome }, label),
    " ", el("span", { className: "mode-text" }, text));
  const likely = medcite.sentences.map((s) => s.probability).filter((p) => typeof p === "number");
  if (outcome === "answer" && likely.length) {
    line.append(" ", el("span", { className: "confidence" },
      `Quoted word for word; the best line is ${Math.round(100 * Math.max(...likely))}% likely to answer.`));
  }
  return line;
}

const SENTENCE_END = /[.!?](?:\s*\[\d+\])*(?=\s|$)/g;

/** The answer text with markers as buttons; a flagged sentence is wrapped and labelled. */
export function answerText(text, citations, onCite) {
  const byMarker = new Map();
  for (const c of citations) byMarker.set(c.marker, [...(byMarker.get(c.marker) || []), c]);
  const root = el("div", { className: "answer-text" });
  let at = 0;
  for (const label of text.matchAll(/\[(UNSUPPORTED|UNVERIFIED)\] ?/g)) {
    if (label.index < at) continue;
    withMarkers(root, text.slice(at, label.index), byMarker, onCite);
    SENTENCE_END.lastIndex = label.index + label[0].length;
    const end = SENTENCE_END.exec(text);
    const stop = end ? end.index + end[0].length : text.length;
    const span = el("span", { className: "flagged", title: "The sources do not support this sentence" },
      el("strong", { className: "flag" }, label[1].toLowerCase()), " ");
    withMarkers(span, text.slice(label.index + label[0].length, stop), byMarker, onCite);
    root.append(span);
    at = stop;
  }
  withMarkers(root, text.slice(at), byMarker, onCite);
  return root;
}

function withMarkers(parent, text, byMarker, onCite) {
  let at = 0;
  for (const match of text.matchAll(/\[(\d+)\]/g)) {
    append(parent, text.slice(at, match.index));
    // the k-th [m] opens the k-th citation marked m: two quoted lines of one passage, two spans
    const all = byMarker.get(Number(match[1])) || [];
    const citation = all.length > 1 ? all.shift() : all[0];
    if (citation) {
      const button = el("button", { type: "button", className: "cite", "data-marker": citation.marker,
        "aria-label": `Source ${citation.marker}: ${citation.title}` }, `[${citation.marker}]`);
      button.addEventListener("click", () => onCite(citation, button));
      parent.append(button);
    } else {
      append(parent, match[0]);
    }
    at = match.index + match[0].length;
  }
  append(parent, text.slice(at));
}

export function sourceList(citations, onCite, heading = "Sources") {
  if (!citations.length) return null;
  const list = el("ol", { className: "sources" });
  const seen = new Set();
  for (const c of citations) {
    const key = `${c.chunk_id}:${c.start}:${c.end}`;
    if (seen.has(key)) continue; // one entry per span
    seen.add(key);
    const button = el("button", { type: "button", className: "source-open", "data-marker": c.marker },
      `[${c.marker}] ${c.title}`);
    button.addEventListener("click", () => onCite(c, button));
    list.append(el("li", {}, button, " ", el("span", { className: "meta" }, sectionPath(c.section), ` · ${c.source}`)));
  }
  return el("section", { className: "sources-box", "aria-label": heading }, el("h3", {}, heading), list);
}

/** The banner over closest lines: they are shown unlike an answer, never under an answer heading. */
export function notConfirmedBanner() {
  return el("p", { className: "not-confirmed", role: "note" },
    el("strong", {}, "Not confirmed."), " No line of the sources could be confirmed to answer this question. ",
    "Each line below is quoted word for word with how likely it is to answer; open it to read it in its source.");
}

/** Sentences the support gate removed (struck through, with why) or flagged. */
export function gateReport(sentences) {
  const removed = sentences.filter((s) => s.status === "removed");
  const flagged = sentences.filter((s) => s.status === "flagged");
  const parts = [];
  if (removed.length) {
    parts.push(el("section", { className: "not-shown", "aria-label": "Not shown: unsupported" },
      el("h3", {}, "Not shown: unsupported"),
      el("p", { className: "hint" }, "The model wrote these, but their cited sources do not support them. Do not rely on them."),
      el("ul", {}, removed.map((s) => el("li", { className: "removed" },
        el("s", {}, s.text), el("span", { className: "reason" }, reasonText(s)))))));
  }
  if (flagged.length) {
    parts.push(el("section", { className: "flagged-box", "aria-label": "Shown with a warning" },
      el("h3", {}, "Shown with a warning"),
      el("ul", {}, flagged.map((s) => el("li", {}, el("span", { className: "flagged" }, s.text),
        el("span", { className: "reason" }, reasonText(s)))))));
  }
  return parts;
}

function reasonText(sentence) {
  if (sentence.reasons.length) return ` — ${sentence.reasons.join("; ")}`;
  return ` — not supported by its sources (support ${score(sentence.support)})`;
}

export function notesList(notes) {
  if (!notes.length) return null;
  return el("ul", { className: "notes", "aria-label": "Notes" }, notes.map((n) => el("li", {}, n)));
}

/** The passages retrieved when there is no answer (abstained, degraded): evidence, not an answer. */
export function evidenceList(evidence) {
  if (!evidence.length) return null;
  return el("details", { className: "evidence" },
    el("summary", {}, `Passages found (${evidence.length}, not an answer)`),
    el("ol", {}, evidence.map((h) => el("li", {},
      el("strong", {}, h.title), " ", el("span", { className: "meta" }, `${sectionPath(h.section)} · ${h.source} · `),
      safeLink(h.url, "link"), el("p", { className: "passage-text" }, clip(h.text, 400))))));
}

export function sectionPath(section) {
  return (section || []).join(" › ");
}

export function score(value) {
  return typeof value === "number" ? value.toFixed(2) : "not verified";
}

function clip(text, limit) {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

/** The answer and a numbered reference list (titles, sections, URLs) in Markdown. */
export function toMarkdown(question, final) {
  const lines = [`**Q:** ${question}`, "", final.medcite.text.trim(), ""];
  if (final.citations.length) {
    lines.push("**References**", "");
    for (const c of final.citations) {
      const section = sectionPath(c.section);
      const where = section ? ` — ${section}` : "";
      lines.push(`[${c.marker}] ${c.title}${where}. ${c.source}, ${c.license}. <${c.url}>`);
    }
    lines.push("");
  }
  lines.push(`_medcite: ${OUTCOMES[outcomeOf(final.medcite)]?.[0] ?? final.medcite.mode}_`);
  return lines.join("\n");
}
