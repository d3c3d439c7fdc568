// Calls to medcite's API with the user's key, and every failure turned into a sentence a person
// can act on (ApiError.kind says what the page should do: "auth" asks for a key).

const KEY = "medcite.apiKey";
let memoryKey = ""; // when sessionStorage is disabled

export function getKey() {
  try {
    return sessionStorage.getItem(KEY) || "";
  } catch {
    return "";
  }
}

export function setKey(key) {
  try {
    sessionStorage.setItem(KEY, key);
  } catch {
    // storage disabled: the key lasts until the page is reloaded
  }
  memoryKey = key;
}

export class ApiError extends Error {
  constructor(kind, message, status = 0) {
    super(message);
    this.kind = kind;
    this.status = status;
  }
}

/** fetch() with the key; resolves to the response when it is 2xx, else throws ApiError. */
export async function call(path, { body, signal } = {}) {
  const headers = { Accept: body ? "text/event-stream, application/json" : "application/json" };
  if (body) headers["Content-Type"] = "application/json";
  const key = getKey() || memoryKey;
  if (key) headers.Authorization = `Bearer ${key}`;
  let response;
  try {
    response = await fetch(path, {
      method: body ? "POST" : "GET", headers, body: body ? JSON.stringify(body) : undefined,
      signal, cache: "no-store",
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError("network", "Could not reach the medcite server. Check your connection and that the server is running, then try again.");
  }
  if (!response.ok) throw await errorFrom(response, Boolean(key));
  return response;
}

async function errorFrom(response, hadKey) {
  let message = "";
  try {
    message = (await response.json())?.error?.message || "";
  } catch {
    message = "";
  }
  const status = response.status;
  const detail = message ? `: ${message}` : "";
  const wait = Number.parseInt(response.headers.get("Retry-After") || "", 10);
  const retry = Number.isFinite(wait) ? `Try again in ${wait} s.` : "Try again in a moment.";
  if (status === 401) {
    return new ApiError("auth", hadKey ? "That API key was refused. Enter a valid key." : "This server needs an API key.", status);
  }
  if (status === 429) return new ApiError("busy", `Too many requests right now (429)${detail}. ${retry}`, status);
  if (status === 503) return new ApiError("unavailable", `The model is not available (503)${detail}. ${retry}`, status);
  if (status === 504) {
    return new ApiError("timeout", `The model took too long to answer (504)${detail}. Try again, or ask a shorter question.`, status);
  }
  if (status === 413) return new ApiError("request", `The question is too long (413)${detail}.`, status);
  if (status >= 500) return new ApiError("server", `The server failed (${status})${detail}. Try again later.`, status);
  return new ApiError("request", `The server could not take this request (${status})${detail}.`, status);
}

/** The sentence for an OpenAI-style error event that arrived inside a stream. */
export function streamError(error) {
  const message = error?.message || "unknown error";
  const what = error?.type === "timeout" ? "the model took too long" : message;
  return new ApiError("stream", `The answer stopped part-way (${what}). The text above is incomplete: do not rely on it.${what === message ? "" : ` Server: ${message}`}`);
}
