// DOM building without markup: every string becomes a text node, never HTML.
// Answer and passage text come from a model and from documents; treating them as text is what
// keeps an "<img onerror=...>" inside a passage inert (the page's CSP is the second wall).

/** An element with attributes (set with setAttribute; no event handlers) and children. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) throw new Error(`el(): use addEventListener, not ${name}`);
    if (name === "className") node.className = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, ...children);
  return node;
}

/** Append nodes or strings (as text nodes); null and undefined are skipped. */
export function append(parent, ...children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** A link only for http(s) URLs; anything else (javascript:, data:) is shown as plain text. */
export function safeLink(url, label) {
  let parsed = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  if (!parsed || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
    return document.createTextNode(url || "no URL");
  }
  return el("a", { href: parsed.href, target: "_blank", rel: "noopener noreferrer" }, label || url);
}
