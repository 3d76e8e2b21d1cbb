// mcpd's browser console (`mcpd serve --ui`).
//
// Everything about tools, resources and prompts comes from this server's
// /mcp endpoint, spoken as plain JSON-RPC over fetch in the stateless
// 2026-07-28 protocol, exactly as any client would (the _meta protocol
// version and capabilities, the Mcp-Method / Mcp-Name / Mcp-Param-* headers).
// Each request also carries _meta["mcpd/client"] = "console", which mcpd
// copies into its logs and audit log as a label. The config's status and the
// recent calls come from the one event stream at ./events.
//
// A tool or prompt that asks (an input_required result) is answered here:
// see runAsking. The page keeps the request and response of the rounds it
// sent, to open and replay them from the recent calls.
//
// Server data is only ever put in the page as text (textContent, attribute
// values): never as HTML.

const PROTOCOL = "2026-07-28";
// The console answers what tools ask (input_required, 2026-07-28): a
// confirmation or a form (elicitation), a sampling request answered by
// the user by hand, and the roots from a list the user edits.
const META = {
  "io.modelcontextprotocol/protocolVersion": PROTOCOL,
  "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} }, sampling: {}, roots: {} },
  "mcpd/client": "console",
};
const ROOTS_KEY = "mcpd-console-roots";
const MAX_ROUNDS = 10;
const TOKEN_KEY = "mcpd-console-token";
const MAX_CALLS = 100;
const IMAGE_TYPES = /^image\/(png|jpeg|gif|webp|avif|bmp)$/;
const AUDIO_TYPES = /^audio\/(wav|x-wav|mpeg|mp3|ogg|webm|flac|aac)$/;
const MCP_URL = new URL("../mcp", document.baseURI).href;
// mcpURL is the endpoint the page lists and calls through: /mcp, or a
// toolset's /mcp/NAME, chosen in the toolset picker (see renderToolsets),
// so that an operator sees exactly what that toolset's clients see.
let mcpURL = MCP_URL;
let toolset = "";
const EVENTS_URL = new URL("events", document.baseURI).href;

const $ = (id) => document.getElementById(id);

// el builds an element; strings and numbers become text nodes.
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// fill replaces node's children, skipping null and undefined ones.
function fill(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

const pretty = (v) => JSON.stringify(v, null, 2);
const fmtTime = (t) => (t ? new Date(t).toLocaleTimeString([], { hour12: false }) : "—");

// ---- MCP over fetch -------------------------------------------------------

// AuthError is a 401: the page says so once, at the token form.
class AuthError extends Error {}

class RPCError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

let nextID = 1;

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

function authHeaders() {
  const t = token();
  return t ? { Authorization: "Bearer " + t } : {};
}

// headerValue encodes a value for an Mcp-Name or Mcp-Param-* header as
// SEP-2243 says: as is when it is plain printable ASCII, else base64.
function headerValue(s) {
  s = String(s);
  const plain = /^[\x20-\x7e]*$/.test(s) && !/^[ \t]|[ \t]$/.test(s) && !(s.startsWith("=?base64?") && s.endsWith("?="));
  if (plain) return s;
  const bytes = new TextEncoder().encode(s);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return "=?base64?" + btoa(bin) + "?=";
}

// paramHeaders mirrors the arguments whose schema property says
// x-mcp-header into Mcp-Param-<Name> headers.
function paramHeaders(schema, args, out = {}) {
  const props = (schema && schema.properties) || {};
  for (const [name, prop] of Object.entries(props)) {
    if (!args || !(name in args) || args[name] === null) continue;
    const v = args[name];
    if (typeof prop["x-mcp-header"] === "string" && prop["x-mcp-header"] !== "") {
      if (typeof v === "string" || typeof v === "boolean" || (Number.isSafeInteger(v))) {
        out["Mcp-Param-" + prop["x-mcp-header"]] = headerValue(v);
      }
    }
    if (prop.properties && typeof v === "object") paramHeaders(prop, v, out);
  }
  return out;
}

// parseSSE returns the JSON-RPC messages of an event-stream body.
function parseSSE(text) {
  const out = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
    if (data) {
      try {
        out.push(JSON.parse(data));
      } catch {
        /* a keep-alive or a partial frame */
      }
    }
  }
  return out;
}

// rpc sends one request to /mcp and returns its result, or throws an
// RPCError (a JSON-RPC error), an AuthError (401) or an Error (HTTP).
// opts.onNotify gets each notification of a streamed (SSE) response as it
// comes (progress, log records); opts.meta adds to the request's _meta;
// opts.signal aborts the request.
async function rpc(method, params = {}, extraHeaders = {}, opts = {}) {
  const id = nextID++;
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": PROTOCOL,
    "Mcp-Method": method,
    ...authHeaders(),
    ...extraHeaders,
  };
  if (method === "tools/call" || method === "prompts/get") headers["Mcp-Name"] = headerValue(params.name);
  if (method === "resources/read") headers["Mcp-Name"] = headerValue(params.uri);
  const sent = { jsonrpc: "2.0", id, method, params: { ...params, _meta: { ...META, ...(opts.meta || {}) } } };
  const body = JSON.stringify(sent);
  protoLog.add("out", sent);
  const resp = await fetch(mcpURL, { method: "POST", headers, body, credentials: "same-origin", cache: "no-store", signal: opts.signal });
  const type = resp.headers.get("Content-Type") || "";
  let msgs = [];
  let text = "";
  if (type.includes("text/event-stream") && resp.body) {
    // Read the stream as it comes: notifications before the result are
    // the call's progress and log records.
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    const take = (frame) => {
      for (const m of parseSSE(frame)) {
        msgs.push(m);
        protoLog.add("in", m);
        if (m && m.method && m.id === undefined && opts.onNotify) opts.onNotify(m);
      }
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      text += value;
      let cut;
      while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
        const m = buf.slice(cut).match(/^\r?\n\r?\n/);
        take(buf.slice(0, cut));
        buf = buf.slice(cut + m[0].length);
      }
    }
    if (buf.trim()) take(buf);
  } else {
    text = await resp.text();
    if (type.includes("json")) {
      try {
        const m = JSON.parse(text);
        msgs = Array.isArray(m) ? m : [m];
        for (const one of msgs) protoLog.add("in", one);
      } catch {
        /* fall through to the HTTP error */
      }
    }
  }
  const msg = msgs.find((m) => m && m.id === id) || msgs.find((m) => m && m.error && m.id == null);
  if (!msgs.length) protoLog.add("in", undefined, `HTTP ${resp.status} to #${id}: ${text.trim().slice(0, 200) || resp.statusText}`);
  if (resp.status === 401) {
    showTokenForm(true);
    throw new AuthError(token() ? "the token was refused (HTTP 401): enter another at the top right" : "this server needs a token: enter an API key or bearer token at the top right");
  }
  if (msg && msg.error) throw new RPCError(msg.error.code, msg.error.message, msg.error.data);
  if (!resp.ok || !msg) throw new Error(`HTTP ${resp.status}: ${text.trim().slice(0, 500) || resp.statusText}`);
  return msg.result;
}

// ---- protocol log -----------------------------------------------------------

// protoLog lists every JSON-RPC message of this page's calls to /mcp, as
// sent and as received (results, errors, and the notifications of a
// streamed response), newest first, filterable by any text in them. It
// shows bodies only: the token in the Authorization header never appears.
const protoLog = {
  max: 500,
  methods: new Map(), // request id -> method, to name a response
  add(dir, msg, note) {
    const list = $("proto-list");
    if (!list) return;
    let what = note ? "HTTP" : "";
    let idText = "";
    if (msg && typeof msg === "object") {
      if (msg.id !== undefined && msg.id !== null) idText = "#" + msg.id;
      if (msg.method) {
        what = msg.method;
        if (dir === "out" && msg.id !== undefined) this.methods.set(msg.id, msg.method);
      } else if (msg.id !== undefined) {
        const m = this.methods.get(msg.id) || "";
        this.methods.delete(msg.id);
        what = (m ? m + " " : "") + (msg.error ? "error" : "result");
      }
    }
    const text = note !== undefined ? note : pretty(msg);
    const li = el(
      "li",
      { class: "proto " + dir + ((msg && msg.error) || note ? " bad" : ""), "data-dir": dir, "data-method": msg && msg.method ? msg.method : "" },
      el(
        "details",
        {},
        el("summary", {}, el("span", { class: "t" }, fmtTime(Date.now())), el("span", { class: "dir", title: dir === "out" ? "sent" : "received" }, dir === "out" ? "→" : "←"), el("span", { class: "m" }, what), el("span", { class: "id" }, idText)),
        el("pre", { tabindex: "0" }, text),
      ),
    );
    li.search = (what + " " + idText + " " + text.slice(0, 20000)).toLowerCase();
    li.hidden = !this.matches(li);
    list.prepend(li);
    while (list.children.length > this.max) list.lastElementChild.remove();
    this.count();
  },
  matches(li) {
    const f = ($("proto-filter")?.value || "").trim().toLowerCase();
    return !f || f.split(/\s+/).every((w) => li.search.includes(w));
  },
  filter() {
    for (const li of $("proto-list").children) li.hidden = !this.matches(li);
    this.count();
  },
  count() {
    const list = $("proto-list");
    const shown = [...list.children].filter((li) => !li.hidden).length;
    $("proto-count").textContent = shown === list.children.length ? `(${shown})` : `(${shown} of ${list.children.length})`;
  },
};

// ---- copy a call --------------------------------------------------------------

// shellQuote quotes a word for a POSIX shell.
function shellQuote(s) {
  return "'" + String(s).replace(/'/g, "'\\''") + "'";
}

// mcpdCallLine is the `mcpd call` command that makes the same call
// without a server (run where the config is).
function mcpdCallLine(name, args) {
  const a = args && Object.keys(args).length ? " --args " + shellQuote(JSON.stringify(args)) : "";
  return "mcpd call " + shellQuote(name).replace(/^'([A-Za-z0-9_.-]+)'$/, "$1") + a;
}

// curlLine is the same request the console sends, as curl: the stateless
// 2026-07-28 protocol needs no session, so one POST is the whole call. It
// declares no client capabilities, since curl answers no question: a tool
// that asks fails closed. The token, when the server needs one, is read
// from $MCPD_TOKEN, never written into the command.
function curlLine(method, params, extraHeaders) {
  const meta = { "io.modelcontextprotocol/protocolVersion": PROTOCOL, "io.modelcontextprotocol/clientCapabilities": {} };
  const body = { jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: meta } };
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": PROTOCOL,
    "Mcp-Method": method,
    "Mcp-Name": headerValue(params.name),
    ...extraHeaders,
  };
  const parts = ["curl -sS " + shellQuote(mcpURL)];
  if (token()) parts.push('-H "Authorization: Bearer $MCPD_TOKEN"');
  for (const [k, v] of Object.entries(headers)) parts.push("-H " + shellQuote(k + ": " + v));
  parts.push("--data-raw " + shellQuote(JSON.stringify(body)));
  return parts.join(" \\\n  ");
}

// copyBar offers the form's current call as an `mcpd call` line and as
// curl: the text is shown (and put on the clipboard where the browser
// allows it).
function copyBar(form, make) {
  const out = el("pre", { class: "copied", tabindex: "0", hidden: true });
  const status = el("span", { class: "keys", "aria-live": "polite" });
  const show = async (kind) => {
    let args;
    try {
      args = form.currentArgs();
    } catch (e) {
      status.textContent = e.message;
      return;
    }
    out.textContent = make(kind, args);
    out.dataset.kind = kind;
    out.hidden = false;
    try {
      await navigator.clipboard.writeText(out.textContent);
      status.textContent = "copied";
    } catch {
      status.textContent = "select and copy it below";
    }
  };
  return el(
    "div",
    { class: "copy" },
    el("div", { class: "actions" }, el("button", { type: "button", class: "copy-mcpd", onclick: () => show("mcpd") }, "Copy as mcpd call"), el("button", { type: "button", class: "copy-curl", onclick: () => show("curl") }, "Copy as curl"), status),
    out,
  );
}

// listAll follows nextCursor through every page of a list method.
async function listAll(method, key) {
  const items = [];
  let cursor;
  for (let page = 0; page < 100; page++) {
    const res = await rpc(method, cursor ? { cursor } : {});
    items.push(...(res[key] || []));
    cursor = res.nextCursor;
    if (!cursor) break;
  }
  return items;
}

// ---- catalog --------------------------------------------------------------

const state = {
  tools: [],
  resources: [],
  templates: [],
  prompts: [],
  selected: null, // {kind, name}
  generation: 0,
};

const KINDS = [
  { kind: "tool", list: "tools", method: "tools/list", key: "tools", id: (x) => x.name },
  { kind: "resource", list: "resources", method: "resources/list", key: "resources", id: (x) => x.uri },
  { kind: "template", list: "templates", method: "resources/templates/list", key: "resourceTemplates", id: (x) => x.uriTemplate },
  { kind: "prompt", list: "prompts", method: "prompts/list", key: "prompts", id: (x) => x.name },
];

async function loadCatalog() {
  let errors = [];
  let auth = null;
  await Promise.all(
    KINDS.map(async (k) => {
      try {
        state[k.list] = await listAll(k.method, k.key);
      } catch (e) {
        state[k.list] = [];
        if (e instanceof AuthError) auth = e;
        else errors.push(`${k.method}: ${e.message}`);
      }
    }),
  );
  // A refused token is one fact, not one per list: the pill by the
  // token form says it.
  setTokenState(auth);
  const le = $("load-error");
  if (le) {
    le.textContent = errors.join("\n");
    le.hidden = errors.length === 0;
  }
  renderCatalog();
  // Keep the open item open across a reload, with its new definition.
  if (state.selected) {
    const k = KINDS.find((k) => k.kind === state.selected.kind);
    const item = state[k.list].find((x) => k.id(x) === state.selected.id);
    if (item) refreshDetail(k, item, true);
  }
}

function renderCatalog() {
  const q = $("filter").value.trim().toLowerCase();
  for (const k of KINDS) {
    const ul = $(k.list + "-list");
    const all = state[k.list];
    const shown = all.filter((x) => !q || (k.id(x) + " " + (x.title || "") + " " + (x.description || "")).toLowerCase().includes(q));
    fill(ul, 
      ...shown.map((x) => {
        const id = k.id(x);
        const current = state.selected && state.selected.kind === k.kind && state.selected.id === id;
        const label = x.name && k.kind !== "tool" && k.kind !== "prompt" ? x.name : id;
        return el(
          "li",
          {},
          el(
            "button",
            { type: "button", title: x.description || id, "aria-current": current ? "true" : false, "data-kind": k.kind, "data-id": id, onclick: () => select(k, x) },
            el("span", { class: "nm" }, label),
            catalogBadges(k.kind, x),
            x.description ? el("span", { class: "ds" }, x.description) : null,
          ),
        );
      }),
    );
    if (shown.length === 0) ul.append(el("li", { class: "empty" }, all.length ? "no match" : "none"));
    $(k.list + "-count").textContent = all.length ? `(${all.length})` : "";
  }
}

// asks holds the tools and prompts seen answering input_required (by this
// page or in the recent calls); tools/list and prompts/list mark the ones
// whose config asks with _meta "mcpd/asks" (snapshot.AsksMetaKey).
const asks = new Set();

function noteAsks(kind, name) {
  const key = kind + " " + name;
  if (asks.has(key)) return;
  asks.add(key);
  renderCatalog();
}

// catalogBadges are the few facts worth seeing before opening an item:
// read-only or destructive, and whether it asks the user.
function catalogBadges(kind, x) {
  const b = [];
  const a = x.annotations || {};
  if (kind === "tool") {
    if (a.readOnlyHint) b.push(["ro", "read-only", "does not change anything (readOnlyHint)"]);
    else if (a.destructiveHint) b.push(["destructive", "destructive", "may destroy data (destructiveHint)"]);
  }
  if (asks.has(kind + " " + x.name) || (x._meta && x._meta["mcpd/asks"] === true)) b.push(["asks", "asks", "asks the user before it answers (input_required)"]);
  if (b.length === 0) return null;
  return el("span", { class: "badges" }, b.map(([cls, text, title]) => el("span", { class: "badge " + cls, title }, text)));
}

function select(k, item) {
  state.selected = { kind: k.kind, id: k.id(item) };
  renderCatalog();
  refreshDetail(k, item);
  const first = $("detail").querySelector("form.call input:not([type=checkbox]), form.call select, form.call textarea, form.call button");
  (first || $("detail")).focus();
}

// shown is the definition the detail view was built from: a reload that
// leaves it as it was keeps the view, with its form and last result.
let shown = "";

function refreshDetail(k, item, keepIfSame) {
  const def = k.kind + JSON.stringify(item);
  if (keepIfSame && def === shown) return;
  shown = def;
  const main = $("detail");
  const view = { tool: toolView, resource: resourceView, template: templateView, prompt: promptView }[k.kind](item);
  fill(main, view);
}

function schemaBlock(title, schema, open) {
  if (!schema) return null;
  return el("details", { class: "schema", open }, el("summary", {}, title), el("pre", { tabindex: "0" }, pretty(schema)));
}

function tags(pairs) {
  const items = pairs.filter(Boolean).map((t) => el("li", {}, t));
  return items.length ? el("ul", { class: "tags", "aria-label": "annotations" }, items) : null;
}

function annotationTags(a) {
  if (!a) return [];
  const out = [];
  if (a.title) out.push("title: " + a.title);
  for (const [k, label] of [["readOnlyHint", "read-only"], ["destructiveHint", "destructive"], ["idempotentHint", "idempotent"], ["openWorldHint", "open world"]]) {
    if (k in a) out.push(a[k] ? label : "not " + label);
  }
  return out;
}

// ---- forms from JSON Schema -----------------------------------------------

let fieldSeq = 0;

function typeOf(s) {
  if (!s) return "";
  if (Array.isArray(s.type)) return s.type.find((t) => t !== "null") || "";
  if (s.type) return s.type;
  if (s.enum) return typeof s.enum[0] === "number" ? "number" : "string";
  if (s.properties) return "object";
  return "";
}

// choices lists the values a property may take with their titles: enum
// (titled by the legacy enumNames), or a oneOf/anyOf of consts.
function choices(p) {
  if (!p) return null;
  if (Array.isArray(p.enum)) return p.enum.map((v, i) => ({ value: v, title: Array.isArray(p.enumNames) && p.enumNames[i] !== undefined ? String(p.enumNames[i]) : String(v) }));
  const alts = p.oneOf || p.anyOf;
  if (Array.isArray(alts) && alts.length && alts.every((a) => a && "const" in a)) return alts.map((a) => ({ value: a.const, title: a.title || String(a.const) }));
  return null;
}

// buildFields returns the form's fields for an object schema, a function
// that reads the arguments back from them, and one that writes arguments
// into them (a replayed call).
function buildFields(schema) {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const readers = [];
  const writers = {};
  const rows = Object.entries(props).map(([name, prop]) => {
    const id = "f" + ++fieldSeq;
    const type = typeOf(prop);
    const req = required.has(name);
    const help = [prop.description, constraintText(prop)].filter(Boolean).join(" · ");
    let input;
    let read;
    let write;
    const def = prop.default;
    const ch = choices(prop);
    const itemChoices = type === "array" ? choices(prop.items) : null;
    if (ch && (type === "string" || type === "number" || type === "integer")) {
      input = el("select", { id, name }, el("option", { value: "" }, req ? "— choose —" : "— not set —"), ch.map((c) => el("option", { value: JSON.stringify(c.value), selected: def !== undefined && JSON.stringify(def) === JSON.stringify(c.value) }, c.title)));
      read = () => (input.value === "" ? undefined : JSON.parse(input.value));
      write = (v) => (input.value = JSON.stringify(v));
    } else if (itemChoices) {
      const sel = (v) => Array.isArray(def) && def.some((d) => JSON.stringify(d) === JSON.stringify(v));
      input = el("select", { id, name, multiple: true, size: Math.min(itemChoices.length, 5) }, itemChoices.map((c) => el("option", { value: JSON.stringify(c.value), selected: sel(c.value) }, c.title)));
      read = () => {
        const vs = [...input.selectedOptions].map((o) => JSON.parse(o.value));
        return vs.length ? vs : undefined;
      };
      write = (v) => {
        const want = new Set((Array.isArray(v) ? v : []).map((x) => JSON.stringify(x)));
        for (const o of input.options) o.selected = want.has(o.value);
      };
    } else if (type === "boolean") {
      input = el("select", { id, name }, el("option", { value: "" }, "— not set —"), el("option", { value: "true", selected: def === true }, "true"), el("option", { value: "false", selected: def === false }, "false"));
      read = () => (input.value === "" ? undefined : input.value === "true");
      write = (v) => (input.value = v === true ? "true" : v === false ? "false" : "");
    } else if (type === "integer" || type === "number") {
      // type=text, not number: a browser's number input hides what was
      // typed when it is not a number, and the console wants the server,
      // not the browser, to say what is wrong.
      input = el("input", { id, name, type: "text", inputmode: type === "integer" ? "numeric" : "decimal", value: def !== undefined ? String(def) : "", placeholder: def !== undefined ? String(def) : "" });
      read = () => {
        const v = input.value.trim();
        if (v === "") return undefined;
        const n = Number(v);
        return Number.isFinite(n) ? n : v;
      };
      write = (v) => (input.value = String(v));
    } else if (type === "string") {
      const long = (prop.maxLength || 0) > 200 || /sql|query|body|text|content/i.test(name);
      input = long ? el("textarea", { id, name, rows: 3 }, def !== undefined ? String(def) : "") : el("input", { id, name, type: "text", value: def !== undefined ? String(def) : "" });
      read = () => (input.value === "" ? undefined : input.value);
      write = (v) => (input.value = typeof v === "string" ? v : JSON.stringify(v));
    } else if (type === "array" && prop.items && ["string", "number", "integer"].includes(typeOf(prop.items)) && !prop.items.properties) {
      const itemType = typeOf(prop.items);
      input = el("textarea", { id, name, rows: 3, placeholder: "one value per line" }, Array.isArray(def) ? def.join("\n") : "");
      read = () => {
        const lines = input.value.split("\n").map((l) => l.trim()).filter((l) => l !== "");
        if (lines.length === 0) return undefined;
        return itemType === "string" ? lines : lines.map((l) => (Number.isFinite(Number(l)) ? Number(l) : l));
      };
      write = (v) => (input.value = Array.isArray(v) ? v.join("\n") : JSON.stringify(v));
    } else {
      input = el("textarea", { id, name, rows: 3, placeholder: "JSON" }, def !== undefined ? pretty(def) : "");
      read = () => {
        const v = input.value.trim();
        if (v === "") return undefined;
        try {
          return JSON.parse(v);
        } catch {
          throw new Error(`${name}: not valid JSON`);
        }
      };
      write = (v) => (input.value = pretty(v));
    }
    if (req) input.setAttribute("aria-required", "true");
    if (help) input.setAttribute("aria-describedby", id + "-help");
    readers.push([name, read]);
    writers[name] = write;
    return el(
      "div",
      { class: "field", "data-field": name },
      el("label", { for: id }, name, req ? el("span", { class: "req", title: "required" }, " *") : null, " ", el("span", { class: "type" }, type || "any")),
      input,
      help ? el("div", { class: "help", id: id + "-help" }, help) : null,
      el("div", { class: "field-error error", role: "alert", hidden: true }),
    );
  });
  const read = () => {
    const args = {};
    for (const [name, r] of readers) {
      const v = r();
      if (v !== undefined) args[name] = v;
    }
    return args;
  };
  // write fills the fields from args; false when some argument has no
  // field (the caller then shows the arguments as JSON).
  const write = (args) => {
    let all = true;
    for (const [name, w] of Object.entries(writers)) {
      if (args && name in args) w(args[name]);
      else w(props[name] && props[name].default !== undefined ? props[name].default : "");
    }
    for (const name of Object.keys(args || {})) if (!writers[name]) all = false;
    return all;
  };
  return { rows, read, write };
}

// validate checks a value against the parts of JSON Schema an elicitation
// form uses (SEP-1034/1330: flat objects of primitives and enum arrays),
// so that a wrong answer is said at its field before anything is sent.
// It returns {field: message}.
function validate(schema, value) {
  const errs = {};
  const props = (schema && schema.properties) || {};
  for (const name of (schema && schema.required) || []) {
    if (value[name] === undefined || value[name] === "") errs[name] = "required";
  }
  for (const [name, p] of Object.entries(props)) {
    const v = value[name];
    if (v === undefined || errs[name]) continue;
    const type = typeOf(p);
    const ch = choices(p);
    const bad = (m) => (errs[name] = m);
    if (type === "integer" && !Number.isInteger(v)) bad("must be a whole number");
    else if (type === "number" && (typeof v !== "number" || !Number.isFinite(v))) bad("must be a number");
    else if (type === "string" && typeof v !== "string") bad("must be text");
    else if (type === "boolean" && typeof v !== "boolean") bad("must be true or false");
    else if (typeof v === "number" && p.minimum !== undefined && v < p.minimum) bad("must be ≥ " + p.minimum);
    else if (typeof v === "number" && p.maximum !== undefined && v > p.maximum) bad("must be ≤ " + p.maximum);
    else if (typeof v === "string" && p.minLength !== undefined && [...v].length < p.minLength) bad(`must be at least ${p.minLength} characters`);
    else if (typeof v === "string" && p.maxLength !== undefined && [...v].length > p.maxLength) bad(`must be at most ${p.maxLength} characters`);
    else if (typeof v === "string" && p.pattern && !safeTest(p.pattern, v)) bad("must match " + p.pattern);
    else if (typeof v === "string" && p.format === "email" && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(v)) bad("must be an email address");
    else if (typeof v === "string" && p.format === "uri" && !/^[a-z][a-z0-9+.-]*:/i.test(v)) bad("must be a URI");
    else if (typeof v === "string" && p.format === "date" && !/^\d{4}-\d{2}-\d{2}$/.test(v)) bad("must be a date (YYYY-MM-DD)");
    else if (ch && !ch.some((c) => JSON.stringify(c.value) === JSON.stringify(v))) bad("must be one of " + ch.map((c) => c.title).join(", "));
    else if (type === "array") {
      if (!Array.isArray(v)) bad("must be a list");
      else if (p.minItems !== undefined && v.length < p.minItems) bad(`choose at least ${p.minItems}`);
      else if (p.maxItems !== undefined && v.length > p.maxItems) bad(`choose at most ${p.maxItems}`);
    }
  }
  return errs;
}

function safeTest(pattern, v) {
  try {
    return new RegExp(pattern, "u").test(v);
  } catch {
    return true; // a pattern the browser cannot read: the server checks
  }
}

// showErrors marks the fields of box that errs names, and clears the rest.
function showErrors(box, errs) {
  for (const f of box.querySelectorAll(".field[data-field]")) {
    const m = errs[f.dataset.field];
    const slot = f.querySelector(".field-error");
    f.classList.toggle("invalid", !!m);
    slot.hidden = !m;
    slot.textContent = m ? f.dataset.field + ": " + m : "";
    f.querySelector("input, select, textarea")?.setAttribute("aria-invalid", m ? "true" : "false");
  }
}

function constraintText(p) {
  const c = [];
  if (p.minimum !== undefined) c.push("≥ " + p.minimum);
  if (p.maximum !== undefined) c.push("≤ " + p.maximum);
  if (p.minLength !== undefined) c.push("min length " + p.minLength);
  if (p.maxLength !== undefined) c.push("max length " + p.maxLength);
  if (p.pattern) c.push("pattern " + p.pattern);
  if (p.format) c.push("format " + p.format);
  if (p.default !== undefined) c.push("default " + JSON.stringify(p.default));
  return c.join(", ");
}

// callForm is a form with the schema's fields, a JSON mode for any
// arguments at all, and a submit button; Ctrl+Enter submits from a
// textarea too.
function callForm({ schema, button, onSubmit, taskOption }) {
  const { rows, read, write } = buildFields(schema);
  const hasFields = rows.length > 0;
  const jsonID = "f" + ++fieldSeq;
  const jsonArea = el("textarea", { id: jsonID, class: "json-args", spellcheck: "false" }, "{}");
  const jsonBox = el("div", { hidden: true }, el("label", { for: jsonID }, "Arguments (JSON object, sent as is)"), jsonArea);
  const fieldsBox = el("div", {}, hasFields ? rows : el("p", { class: "hint" }, "No arguments."));
  const useJSON = el("input", { type: "checkbox", id: jsonID + "-mode" });
  useJSON.addEventListener("change", () => {
    if (useJSON.checked) {
      try {
        jsonArea.value = pretty(read());
      } catch {
        /* keep what is there */
      }
    }
    jsonBox.hidden = !useJSON.checked;
    fieldsBox.hidden = useJSON.checked;
  });
  const status = el("span", { class: "keys" }, "Enter or Ctrl+Enter to send");
  const submit = el("button", { type: "submit" }, button);
  // Run as a task (the tasks extension): the call answers with a task at
  // once and runs on; see runTask.
  const asTask = taskOption ? el("input", { type: "checkbox", id: jsonID + "-task", name: "as-task" }) : null;
  const form = el(
    "form",
    { class: "call", novalidate: true },
    el("div", { class: "modes" }, el("label", {}, useJSON, " edit the arguments as JSON"), asTask ? el("label", { title: "tools with a task block answer with a task that runs on; others answer as usual" }, asTask, " run as a task") : null),
    fieldsBox,
    jsonBox,
    el("div", { class: "actions" }, submit, status),
  );
  // replay puts a recent call's arguments back in the form: in its
  // fields, or as JSON when some argument has none.
  form.replay = (args) => {
    const inFields = write(args);
    useJSON.checked = !inFields;
    jsonArea.value = pretty(args || {});
    jsonBox.hidden = inFields;
    fieldsBox.hidden = !inFields;
  };
  form.asTask = () => !!(asTask && asTask.checked);
  // currentArgs are the arguments as the form would send them now.
  form.currentArgs = () => (useJSON.checked ? JSON.parse(jsonArea.value || "{}") : read());
  form.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    let args;
    try {
      args = useJSON.checked ? JSON.parse(jsonArea.value || "{}") : read();
    } catch (err) {
      status.textContent = err.message;
      status.className = "keys error";
      return;
    }
    status.textContent = asTask && asTask.checked ? "running as a task: follow it below" : "calling…";
    status.className = "keys";
    submit.disabled = true;
    try {
      await onSubmit(args);
      status.textContent = "Enter or Ctrl+Enter to send";
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

// ---- results --------------------------------------------------------------

function resultBox(kindLabel) {
  return el("section", { class: "result", "aria-live": "polite", "aria-label": kindLabel + " result" });
}

// timed runs f and shows its outcome in box.
async function timed(box, f, render) {
  const start = performance.now();
  box.className = "result";
  fill(box, el("header", {}, "calling…"));
  try {
    const res = await f();
    const ms = performance.now() - start;
    render(res, ms);
  } catch (e) {
    showFailure(box, e, performance.now() - start);
  }
}

function contentBlock(c) {
  const label = (t) => el("div", { class: "label" }, t);
  switch (c.type) {
    case "text": {
      // JSON text (a SQL tool's rows) pretty-printed; the text as the
      // model gets it kept one click away.
      const j = jsonText(c.text);
      if (j === undefined) return el("div", { class: "block" }, label("text"), el("pre", { class: "text" }, c.text));
      return el("div", { class: "block" }, label("text · JSON, pretty-printed"), el("pre", { class: "text json" }, pretty(j)), el("details", { class: "raw-text" }, el("summary", {}, "raw text"), el("pre", { class: "raw" }, c.text)));
    }
    case "image":
      if (IMAGE_TYPES.test(c.mimeType || "") && typeof c.data === "string") {
        return el("div", { class: "block" }, label("image " + c.mimeType), el("img", { src: `data:${c.mimeType};base64,${c.data}`, alt: "image returned by the call" }));
      }
      return el("div", { class: "block" }, label("image"), el("pre", {}, `not shown: type ${JSON.stringify(c.mimeType)}`));
    case "audio":
      if (AUDIO_TYPES.test(c.mimeType || "") && typeof c.data === "string") {
        return el("div", { class: "block" }, label("audio " + c.mimeType), el("audio", { controls: true, src: `data:${c.mimeType};base64,${c.data}` }));
      }
      return el("div", { class: "block" }, label("audio"), el("pre", {}, `not played: type ${JSON.stringify(c.mimeType)}`));
    case "resource":
      return el("div", { class: "block" }, label("embedded resource " + ((c.resource && c.resource.uri) || "")), resourceContents(c.resource || {}));
    case "resource_link":
      return el("div", { class: "block" }, label("resource link"), el("pre", {}, [c.uri, c.name, c.mimeType].filter(Boolean).join("  ")));
    default:
      return el("div", { class: "block" }, label(c.type || "content"), el("pre", {}, pretty(c)));
  }
}

function jsonText(t) {
  if (typeof t !== "string" || !/^\s*[[{]/.test(t)) return undefined;
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
}

function resourceContents(r) {
  if (typeof r.text === "string") {
    let text = r.text;
    if (/json/.test(r.mimeType || "")) {
      try {
        text = pretty(JSON.parse(text));
      } catch {
        /* as is */
      }
    }
    return el("pre", { class: "text" }, text);
  }
  if (typeof r.blob === "string") {
    if (IMAGE_TYPES.test(r.mimeType || "")) return el("img", { src: `data:${r.mimeType};base64,${r.blob}`, alt: "resource " + (r.uri || "") });
    return el("pre", {}, `${r.mimeType || "binary"}, ${Math.floor((r.blob.length * 3) / 4)} bytes (base64 not shown)`);
  }
  return el("pre", {}, pretty(r));
}

function rawBlock(res) {
  return el("details", { class: "schema block" }, el("summary", {}, "raw result (JSON-RPC)"), el("pre", { tabindex: "0" }, pretty(res)));
}

function renderToolResult(box, res, ms) {
  const bad = !!res.isError;
  box.className = "result " + (bad ? "bad" : "ok");
  const blocks = (res.content || []).map(contentBlock);
  fill(box, 
    el("header", {}, el("strong", { class: "outcome" }, bad ? "tool error (isError)" : res.resultType === "input_required" ? "input required" : "ok"), el("span", {}, `${(res.content || []).length} content block(s)`), el("span", { class: "took" }, ms.toFixed(1) + " ms")),
    ...blocks,
    res.structuredContent !== undefined ? el("div", { class: "block" }, el("div", { class: "label" }, "structuredContent"), el("pre", { class: "structured" }, pretty(res.structuredContent))) : null,
    rawBlock(res),
  );
}

// ---- calls that ask (input_required) --------------------------------------

// mine holds the rounds this page sent, to open and replay from the recent
// calls: the call stream says what was called, not with what. Each round
// waits, per name, for its row in the stream (sent order is answered order
// but for concurrent calls of one name, which may swap).
const mine = { waiting: new Map() };

function newRound(kind, name, args, params) {
  const r = { kind, name, args, request: params, response: undefined, error: undefined, outcome: "calling", row: null };
  const key = kind + " " + name;
  if (!mine.waiting.has(key)) mine.waiting.set(key, []);
  mine.waiting.get(key).push(r);
  return r;
}

function claimRound(c) {
  const q = mine.waiting.get(c.kind + " " + c.name);
  return q && q.length ? q.shift() : null;
}

// runAsking calls a tool or prompt and, while it answers input_required,
// shows its questions, then calls again with the answers and the
// requestState it was given.
async function runAsking({ kind, method, name, args, headers, box, livePane, render }) {
  let more = {};
  const ctl = new AbortController();
  const stop = el("button", { type: "button", class: "stop", onclick: () => ctl.abort() }, "Stop");
  if (livePane) livePane.reset(stop);
  for (let round = 1; ; round++) {
    const params = { name, arguments: args, ...more };
    const rec = newRound(kind, name, args, params);
    const start = performance.now();
    box.className = "result";
    fill(box, el("header", {}, round > 1 ? `calling again with the answers (round ${round})…` : "calling…", livePane ? null : stop));
    let res;
    try {
      res = await rpc(method, params, headers, {
        signal: ctl.signal,
        meta: livePane ? { progressToken: "console-" + nextID, "io.modelcontextprotocol/logLevel": "debug" } : {},
        onNotify: livePane ? (m) => livePane.note(m) : undefined,
      });
    } catch (e) {
      const ms = performance.now() - start;
      rec.error = e instanceof RPCError ? { code: e.code, message: e.message, data: e.data } : { message: e.message };
      if (ctl.signal.aborted) {
        rec.outcome = "cancelled";
        box.className = "result cancelled";
        fill(box, el("header", {}, el("strong", { class: "outcome" }, "cancelled"), el("span", {}, "you stopped the call"), el("span", { class: "took" }, ms.toFixed(1) + " ms")));
      } else {
        rec.outcome = e instanceof RPCError ? "protocol_error" : "failed";
        showFailure(box, e, ms);
      }
      if (livePane) livePane.done();
      updateRow(rec);
      return;
    }
    const ms = performance.now() - start;
    rec.response = res;
    if (!res || res.resultType !== "input_required") {
      rec.outcome = res && res.isError ? "tool_error" : "ok";
      updateRow(rec);
      if (livePane) livePane.done();
      render(box, res, ms);
      // On a small screen the result is below the form: bring it up.
      box.scrollIntoView({ block: "nearest" });
      return;
    }
    rec.outcome = "input_required";
    updateRow(rec);
    noteAsks(kind, name);
    if (round >= MAX_ROUNDS) {
      showFailure(box, new Error(`still asking after ${round} rounds: the console stopped`), ms);
      if (livePane) livePane.done();
      return;
    }
    if (livePane) livePane.state("waiting for your answer");
    const answer = await askPanel(box, res, round, ms);
    if (livePane) livePane.state("running");
    if (answer.cancel) {
      box.className = "result cancelled";
      fill(box, el("header", {}, el("strong", { class: "outcome" }, "cancelled"), el("span", {}, `you left ${name}'s question unanswered; it did not run`)));
      rec.outcome = "cancelled";
      updateRow(rec);
      if (livePane) livePane.done();
      return;
    }
    const status = box.closest("article")?.querySelector("form.call .keys");
    if (status) status.textContent = "calling…";
    more = { inputResponses: answer.responses, requestState: res.requestState };
  }
}

function showFailure(box, e, ms) {
  box.className = "result bad";
  const head = e instanceof RPCError ? `protocol error ${e.code}` : "request failed";
  fill(box,
    el("header", {}, el("strong", { class: "outcome" }, head), el("span", { class: "took" }, ms.toFixed(1) + " ms")),
    el("div", { class: "block" }, el("pre", { class: "text" }, e.message)),
    e.data !== undefined ? el("div", { class: "block" }, el("div", { class: "label" }, "data"), el("pre", {}, pretty(e.data))) : null,
  );
}

// askKind tells the four questions apart: a confirmation is an
// elicitation with an empty form.
function askKind(req) {
  if (req.method === "sampling/createMessage") return "sampling";
  if (req.method === "roots/list") return "roots";
  if (req.method === "elicitation/create") {
    const props = (req.params && req.params.requestedSchema && req.params.requestedSchema.properties) || {};
    return Object.keys(props).length === 0 ? "confirm" : "form";
  }
  return "unknown";
}

function savedRoots() {
  try {
    const v = JSON.parse(localStorage.getItem(ROOTS_KEY) || "[]");
    return Array.isArray(v) ? v.filter((x) => typeof x === "string") : [];
  } catch {
    return [];
  }
}

// askPanel shows one round's questions in box and resolves with the
// answers ({responses}) or {cancel: true}.
function askPanel(box, res, round, ms) {
  return new Promise((resolve) => {
    const items = [];
    const reqs = Object.entries(res.inputRequests || {});
    for (const [id, req] of reqs) {
      const kind = askKind(req);
      const p = req.params || {};
      const legend = { confirm: "confirmation", form: "form", sampling: "sampling request (answer as the model would)", roots: "roots" }[kind] || req.method;
      const fs = el("fieldset", { class: "ask-item", "data-ask": id, "data-kind": kind }, el("legend", {}, `${id} · ${legend}`));
      let answer;
      if (kind === "confirm") {
        fs.append(el("p", { class: "ask-msg" }, p.message || "Confirm?"));
        answer = (action) => ({ action, ...(action === "accept" ? { content: {} } : {}) });
      } else if (kind === "form") {
        const { rows, read } = buildFields(p.requestedSchema);
        fs.append(el("p", { class: "ask-msg" }, p.message || ""), ...rows);
        answer = (action) => {
          if (action !== "accept") return { action };
          const content = read();
          const errs = validate(p.requestedSchema, content);
          showErrors(fs, errs);
          if (Object.keys(errs).length) throw new Error("fix the marked field" + (Object.keys(errs).length > 1 ? "s" : ""));
          return { action, content };
        };
      } else if (kind === "sampling") {
        const msgs = (p.messages || []).map((m) => el("div", { class: "sample-msg" }, el("span", { class: "label" }, m.role), el("pre", {}, m.content && m.content.type === "text" ? m.content.text : pretty(m.content))));
        const tid = "f" + ++fieldSeq;
        const text = el("textarea", { id: tid, name: "sampling-answer", rows: 3 });
        const mid = "f" + ++fieldSeq;
        const model = el("input", { id: mid, name: "sampling-model", type: "text", value: "human (mcpd console)" });
        fs.append(
          p.systemPrompt ? el("div", { class: "sample-msg" }, el("span", { class: "label" }, "system"), el("pre", {}, p.systemPrompt)) : null,
          ...msgs,
          el("p", { class: "help" }, `No model answers here: you do. ${p.maxTokens ? `The server asked for at most ${p.maxTokens} tokens.` : ""}`),
          el("div", { class: "field", "data-field": "answer" }, el("label", { for: tid }, "your answer"), text, el("div", { class: "field-error error", hidden: true })),
          el("div", { class: "field" }, el("label", { for: mid }, "model name sent"), model),
        );
        answer = (action) => {
          if (action !== "accept") return undefined;
          if (text.value.trim() === "") {
            showErrors(fs, { answer: "write the answer the server gets" });
            throw new Error("write the sampling answer");
          }
          showErrors(fs, {});
          return { role: "assistant", content: { type: "text", text: text.value }, model: model.value || "human", stopReason: "endTurn" };
        };
      } else if (kind === "roots") {
        const rid = "f" + ++fieldSeq;
        const list = el("textarea", { id: rid, name: "roots", rows: 3, placeholder: "file:///home/me/project" }, savedRoots().join("\n"));
        fs.append(
          el("p", { class: "ask-msg" }, "The server asks which directories (roots) it may use. Edit the list, one URI a line; the console remembers it."),
          el("div", { class: "field", "data-field": "roots" }, el("label", { for: rid }, "roots"), list, el("div", { class: "field-error error", hidden: true })),
        );
        answer = (action) => {
          if (action !== "accept") return undefined;
          const uris = list.value.split("\n").map((l) => l.trim()).filter(Boolean);
          const bad = uris.find((u) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(u));
          if (bad) {
            showErrors(fs, { roots: `${bad} is not a URI (file:///…)` });
            throw new Error("fix the roots");
          }
          showErrors(fs, {});
          localStorage.setItem(ROOTS_KEY, JSON.stringify(uris));
          return { roots: uris.map((uri) => ({ uri, name: uri.replace(/\/+$/, "").split("/").pop() || uri })) };
        };
      } else {
        fs.append(el("pre", {}, pretty(req)));
        answer = () => undefined;
      }
      items.push({ id, kind, answer, fs });
    }
    const elicits = items.some((i) => i.kind === "confirm" || i.kind === "form");
    const onlyConfirm = items.length > 0 && items.every((i) => i.kind === "confirm");
    const err = el("span", { class: "ask-error error", role: "alert" });
    const finish = (action) => {
      const responses = {};
      try {
        for (const i of items) {
          const a = i.answer(action);
          if (a !== undefined) responses[i.id] = a;
        }
      } catch (e) {
        err.textContent = e.message;
        return;
      }
      resolve({ responses });
    };
    const accept = el("button", { type: "submit", class: "accept", title: "Enter" }, onlyConfirm ? "Confirm" : "Send answers");
    const decline = elicits ? el("button", { type: "button", class: "decline", onclick: () => finish("decline") }, "Decline") : null;
    const cancel = el("button", { type: "button", class: "cancel", title: "Escape", onclick: () => resolve({ cancel: true }) }, "Cancel");
    const form = el(
      "form",
      {
        class: "ask",
        novalidate: true,
        "aria-label": "the server asks",
        onsubmit: (e) => (e.preventDefault(), finish("accept")),
        onkeydown: (e) => {
          if (e.key === "Escape") {
            e.preventDefault();
            resolve({ cancel: true });
          }
        },
      },
      ...items.map((i) => i.fs),
      el("div", { class: "actions" }, accept, decline, cancel, err),
    );
    const status = box.closest("article")?.querySelector("form.call .keys");
    if (status) status.textContent = "waiting for your answer below…";
    box.className = "result asked";
    fill(box,
      el("header", {}, el("strong", { class: "outcome" }, "input required"), el("span", {}, `round ${round}: the server asks before it answers`), el("span", { class: "took" }, ms.toFixed(1) + " ms")),
      form,
      rawBlock(res),
    );
    (form.querySelector("input, select, textarea") || accept).focus();
  });
}

// liveBox is the pane of the current call's progress and log records,
// sent on the response stream before the result.
function liveBox() {
  const bar = el("progress", { max: 1, value: 0, hidden: true });
  const what = el("span", { class: "live-state" }, "idle");
  const log = el("ol", { class: "live-log" });
  const ctrl = el("span", {});
  const pane = el("section", { class: "live", "aria-label": "progress and log of the current call", hidden: true }, el("header", {}, el("span", { class: "label" }, "live"), what, bar, ctrl), log);
  pane.reset = (stop) => {
    pane.hidden = false;
    bar.hidden = true;
    what.textContent = "running";
    log.replaceChildren();
    fill(ctrl, stop);
  };
  pane.note = (m) => {
    const p = m.params || {};
    if (m.method === "notifications/progress") {
      bar.hidden = false;
      if (p.total) {
        bar.max = p.total;
        bar.value = p.progress;
      } else bar.removeAttribute("value");
      what.textContent = `progress ${p.progress}${p.total ? " / " + p.total : ""}${p.message ? " · " + p.message : ""}`;
      log.append(el("li", { class: "progress" }, what.textContent));
    } else if (m.method === "notifications/message") {
      log.append(el("li", { class: "log " + (p.level || "") }, el("span", { class: "lvl" }, p.level || "log"), " ", p.logger ? p.logger + ": " : "", typeof p.data === "string" ? p.data : JSON.stringify(p.data)));
    }
    log.scrollTop = log.scrollHeight;
  };
  pane.state = (text) => (what.textContent = text);
  pane.done = () => {
    // A call that sent nothing live leaves no empty pane behind.
    what.textContent = "done";
    pane.hidden = log.children.length === 0;
    ctrl.replaceChildren();
  };
  return pane;
}

// ---- views ----------------------------------------------------------------

function header(kind, title, sub) {
  return [el("div", { class: "kind" }, kind), el("h3", { id: "detail-h" }, title), sub ? el("p", { class: "desc" }, sub) : null];
}

function toolView(t) {
  const box = resultBox("tool");
  const form = callForm({
    schema: t.inputSchema,
    button: "Call " + t.name,
    taskOption: true,
    onSubmit: (args) =>
      form.asTask()
        ? runTask({ name: t.name, args, headers: paramHeaders(t.inputSchema, args), box })
        : runAsking({ kind: "tool", method: "tools/call", name: t.name, args, headers: paramHeaders(t.inputSchema, args), box, livePane, render: renderToolResult }),
  });
  form.id = "call-form";
  const livePane = liveBox();
  const copy = copyBar(form, (kind, args) =>
    kind === "curl" ? curlLine("tools/call", { name: t.name, arguments: args }, paramHeaders(t.inputSchema, args)) : mcpdCallLine(t.name, args),
  );
  return el(
    "article",
    { "aria-labelledby": "detail-h", "data-tool": t.name },
    header("tool", t.name, t.description),
    tags([t.title && t.title !== t.name ? "title: " + t.title : null, ...annotationTags(t.annotations)]),
    schemaBlock("input schema", t.inputSchema, false),
    schemaBlock("output schema", t.outputSchema, false),
    form,
    copy,
    livePane,
    box,
  );
}

function resourceView(r) {
  const box = resultBox("resource");
  const read = el("button", { type: "button", class: "primary" }, "Read");
  read.addEventListener("click", () => timed(box, () => rpc("resources/read", { uri: r.uri }), (res, ms) => renderRead(box, res, ms)));
  return el(
    "article",
    { "aria-labelledby": "detail-h" },
    header("resource", r.uri, r.description),
    tags([r.name ? "name: " + r.name : null, r.mimeType ? "type: " + r.mimeType : null, r.size !== undefined ? "size: " + r.size : null, ...annotationTags(r.annotations)]),
    el("form", { class: "call", onsubmit: (e) => (e.preventDefault(), read.click()) }, el("div", { class: "actions" }, read)),
    box,
  );
}

function renderRead(box, res, ms) {
  box.className = "result ok";
  fill(box, 
    el("header", {}, el("strong", {}, "ok"), el("span", {}, `${(res.contents || []).length} content(s)`), el("span", { class: "took" }, ms.toFixed(1) + " ms")),
    ...(res.contents || []).map((c) => el("div", { class: "block" }, el("div", { class: "label" }, [c.uri, c.mimeType].filter(Boolean).join(" · ")), resourceContents(c))),
    rawBlock(res),
  );
}

// templateVars lists the variables of an RFC 6570 URI template.
function templateVars(tpl) {
  const out = [];
  for (const m of tpl.matchAll(/\{([+#./;?&]?)([^}]+)\}/g)) {
    for (const v of m[2].split(",")) out.push({ op: m[1], name: v.replace(/\*$|:\d+$/, "") });
  }
  return out;
}

// expand fills a URI template: simple and reserved expansion, and the
// query forms; enough for resource templates.
function expand(tpl, values) {
  return tpl.replace(/\{([+#./;?&]?)([^}]+)\}/g, (_, op, list) => {
    const names = list.split(",").map((v) => v.replace(/\*$|:\d+$/, ""));
    const enc = op === "+" || op === "#" ? encodeURI : encodeURIComponent;
    const parts = names.filter((n) => values[n] !== undefined && values[n] !== "").map((n) => (op === "?" || op === "&" || op === ";" ? `${n}=${enc(values[n])}` : enc(values[n])));
    if (parts.length === 0) return "";
    const sep = { "": ",", "+": ",", "#": ",", ".": ".", "/": "/", ";": ";", "?": "&", "&": "&" }[op];
    const first = { "": "", "+": "", "#": "#", ".": ".", "/": "/", ";": ";", "?": "?", "&": "&" }[op];
    return first + parts.join(sep);
  });
}

function templateView(t) {
  const box = resultBox("resource");
  const schema = { type: "object", properties: {}, required: [] };
  for (const v of templateVars(t.uriTemplate)) {
    schema.properties[v.name] = { type: "string" };
    schema.required.push(v.name);
  }
  const uriOut = el("code", {}, "");
  const form = callForm({
    schema,
    button: "Read",
    onSubmit: (vals) => {
      const uri = expand(t.uriTemplate, vals);
      uriOut.textContent = uri;
      return timed(box, () => rpc("resources/read", { uri }), (res, ms) => renderRead(box, res, ms));
    },
  });
  return el(
    "article",
    { "aria-labelledby": "detail-h" },
    header("resource template", t.uriTemplate, t.description),
    tags([t.name ? "name: " + t.name : null, t.mimeType ? "type: " + t.mimeType : null]),
    form,
    el("p", { class: "hint" }, "URI read: ", uriOut),
    box,
  );
}

function promptView(p) {
  const box = resultBox("prompt");
  const schema = { type: "object", properties: {}, required: [] };
  for (const a of p.arguments || []) {
    schema.properties[a.name] = { type: "string", description: a.description };
    if (a.required) schema.required.push(a.name);
  }
  const form = callForm({
    schema,
    button: "Render " + p.name,
    onSubmit: (args) => runAsking({ kind: "prompt", method: "prompts/get", name: p.name, args, headers: {}, box, render: renderPrompt }),
  });
  form.id = "call-form";
  return el("article", { "aria-labelledby": "detail-h", "data-prompt": p.name }, header("prompt", p.name, p.description), tags([p.title ? "title: " + p.title : null]), form, box);
}

function renderPrompt(box, res, ms) {
  box.className = "result ok";
  fill(box, 
    el("header", {}, el("strong", {}, "ok"), el("span", {}, `${(res.messages || []).length} message(s)`), el("span", { class: "took" }, ms.toFixed(1) + " ms")),
    res.description ? el("div", { class: "block" }, el("div", { class: "label" }, "description"), el("pre", {}, res.description)) : null,
    ...(res.messages || []).map((m) => {
      const b = contentBlock(m.content || {});
      b.querySelector(".label")?.prepend(m.role + " · ");
      return b;
    }),
    rawBlock(res),
  );
}

// ---- config status --------------------------------------------------------

function renderStatus(s) {
  const pill = $("config-pill");
  const failed = s.last_reload.result === "failure";
  pill.className = "pill " + (failed ? "bad" : "ok");
  pill.textContent = failed ? `reload failed · serving generation ${s.generation}` : `generation ${s.generation}` + (s.last_reload.time ? ` · reloaded ${fmtTime(s.last_reload.time)}` : "");
  const facts = $("config-facts");
  fill(facts, 
    el("dt", {}, "generation"),
    el("dd", { id: "generation" }, String(s.generation)),
    el("dt", {}, "loaded"),
    el("dd", {}, fmtTime(s.loaded_at)),
    el("dt", {}, "last reload"),
    el("dd", { id: "last-reload" }, s.last_reload.time ? `${fmtTime(s.last_reload.time)} · ${s.last_reload.result}` : "none yet"),
    el("dt", {}, "files"),
    el("dd", { class: "files" }, s.files.length ? s.files.map((f) => el("div", {}, f)) : "—"),
  );
  // Errors first: they are why the edit did not load.
  const rank = (d) => (d.severity === "error" ? 0 : 1);
  const diags = (s.last_reload.diagnostics || []).slice().sort((a, b) => rank(a) - rank(b));
  const errs = diags.filter((d) => d.severity === "error").length;
  const box = $("diagnostics");
  fill(box, 
    s.pending ? el("p", { class: "pending" }, "reload held back: " + s.pending) : null,
    diags.length ? el("p", { class: "diag-head" }, `The latest edit did not load (${errs} error${errs === 1 ? "" : "s"}); the last good config is still serving.`) : null,
    ...diags.map((d) => {
      const where = d.file ? `${d.file}:${d.line}:${d.column}` : "(no position)";
      const caret = d.source !== undefined && d.column ? caretLine(d.source, d.column, d.end_line === d.line ? d.end_column : 0) : "";
      return el(
        "div",
        { class: "diag " + d.severity, "data-line": d.line || "" },
        el("div", { class: "where" }, `${where}: ${d.severity}`),
        el("div", { class: "msg" }, d.summary + (d.detail ? ": " + d.detail : "")),
        d.source !== undefined ? el("pre", {}, `${String(d.line).padStart(4)} | ${d.source}\n     | ${caret}`) : null,
      );
    }),
  );
  const reloadForToolset = renderToolsets(s.toolsets || []);
  if (reloadForToolset && s.generation === state.generation) loadCatalog();
  if (s.generation !== state.generation) {
    const first = state.generation === 0;
    state.generation = s.generation;
    if (!first) loadCatalog();
  }
}

// renderToolsets fills the toolset picker with the config's toolsets (it
// is hidden when there are none), and falls back to /mcp when the toolset
// being viewed is gone. It returns true when that changed the endpoint.
function renderToolsets(names) {
  const pick = $("toolset");
  if (!pick) return false;
  const current = names.includes(toolset) ? toolset : "";
  fill(pick, el("option", { value: "" }, "everything · /mcp"), ...names.map((n) => el("option", { value: n }, `${n} · /mcp/${n}`)));
  pick.value = current;
  $("toolset-pick").hidden = names.length === 0;
  if (current !== toolset) {
    setToolset(current);
    return true;
  }
  return false;
}

function setToolset(name) {
  toolset = name;
  mcpURL = name ? new URL("../mcp/" + encodeURIComponent(name), document.baseURI).href : MCP_URL;
}

function caretLine(src, col, endCol) {
  let pad = "";
  for (let i = 0; i < col - 1 && i < src.length; i++) pad += src[i] === "\t" ? "\t" : " ";
  return pad + "^".repeat(endCol > col ? endCol - col : 1);
}

// ---- recent calls ---------------------------------------------------------

const OUTCOMES = { ok: "ok", tool_error: "tool error", protocol_error: "protocol error", cancelled: "cancelled", input_required: "input required", failed: "failed", calling: "calling…" };
const outcomeClass = (o) => (o === "ok" ? "ok" : o === "input_required" ? "asked" : o === "cancelled" ? "cancelled" : o === "calling" ? "" : "bad");

function addCall(c, fresh) {
  const tbody = $("calls").tBodies[0];
  // Another principal's call comes without who made it (see
  // docs/security.md, "The console's call stream").
  const who = [c.other ? "another caller" : c.principal, c.client ? null : c.transport, c.toolset ? "via " + c.toolset : null].filter(Boolean).join(" · ");
  const open = el("button", { type: "button", class: "open", "aria-expanded": "false", title: "open: request, response, replay" }, c.kind === "tool" ? c.name : `${c.kind} ${c.name}`);
  const row = el(
    "tr",
    { class: outcomeClass(c.outcome) + (fresh ? " fresh" : ""), "data-name": c.name, "data-client": c.client || "", "data-outcome": c.outcome },
    el("td", { class: "mono" }, fmtTime(c.time)),
    el("td", { class: "name", title: c.kind }, open),
    el("td", { class: "who" }, who, c.client ? el("span", { class: "console-tag" }, " · " + c.client) : null),
    el("td", { class: "num" }, c.duration_ms.toFixed(1)),
    el("td", { class: "outcome", title: c.error || "" }, OUTCOMES[c.outcome] || c.outcome.replace("_", " ")),
  );
  row.call = c;
  open.addEventListener("click", () => toggleCall(row));
  // A round this page sent: it can be opened in full and replayed.
  if (fresh && c.client === "console" && !c.other) {
    const rec = claimRound(c);
    if (rec) {
      rec.row = row;
      row.round = rec;
      row.dataset.mine = "true";
      updateRow(rec);
    }
  }
  if (c.outcome === "input_required") noteAsks(c.kind, c.name);
  tbody.prepend(row);
  while (tbody.rows.length > MAX_CALLS) {
    const last = tbody.rows[tbody.rows.length - 1];
    if (last.detail) last.detail.remove();
    tbody.deleteRow(-1);
  }
  $("calls-count").textContent = `(${tbody.querySelectorAll("tr:not(.call-detail)").length})`;
}

// updateRow shows what the page knows of its round beyond the stream: a
// question left unanswered is a cancelled call.
function updateRow(rec) {
  const row = rec.row;
  if (!row) return;
  if (rec.outcome === "cancelled" && row.call.outcome === "input_required") {
    row.querySelector(".outcome").textContent = "input required → cancelled";
    row.className = "cancelled";
    row.dataset.outcome = "cancelled";
  }
  if (row.detail) renderCallDetail(row);
}

function toggleCall(row) {
  const btn = row.querySelector("button.open");
  if (row.detail) {
    row.detail.remove();
    row.detail = null;
    btn.setAttribute("aria-expanded", "false");
    return;
  }
  row.detail = el("tr", { class: "call-detail" }, el("td", { colspan: 5 }));
  row.after(row.detail);
  btn.setAttribute("aria-expanded", "true");
  renderCallDetail(row);
}

function renderCallDetail(row) {
  const c = row.call;
  const rec = row.round;
  const cell = row.detail.firstChild;
  const facts = el(
    "dl",
    { class: "facts" },
    el("dt", {}, "when"),
    el("dd", {}, new Date(c.time).toLocaleString()),
    el("dt", {}, "what"),
    el("dd", {}, `${c.kind} ${c.name}`),
    el("dt", {}, "outcome"),
    el("dd", {}, OUTCOMES[c.outcome] || c.outcome),
    c.error ? el("dt", {}, "error") : null,
    c.error ? el("dd", {}, c.error) : null,
    el("dt", {}, "transport"),
    el("dd", {}, c.transport || "—"),
  );
  if (!rec) {
    fill(cell, facts, el("p", { class: "hint" }, c.other ? "Another caller's call: its arguments and answer are not shown." : "The console keeps the request and response of the calls this page made only."), replayButton(c.kind, c.name, undefined));
    return;
  }
  const req = { ...rec.request };
  fill(
    cell,
    facts,
    el("div", { class: "label" }, "request (params)"),
    el("pre", { class: "req", tabindex: "0" }, pretty(req)),
    el("div", { class: "label" }, rec.error ? "error" : "response (result)"),
    el("pre", { class: "resp", tabindex: "0" }, rec.error ? pretty(rec.error) : rec.response === undefined ? "(waiting)" : pretty(rec.response)),
    replayButton(rec.kind, rec.name, rec.args),
  );
}

function replayButton(kind, name, args) {
  const k = KINDS.find((k) => k.kind === kind);
  if (!k || (kind !== "tool" && kind !== "prompt")) return null;
  return el("button", { type: "button", class: "replay", onclick: () => replay(k, name, args) }, args ? "Replay into the form" : "Open " + name);
}

// replay opens the tool or prompt with args in its form, ready to send.
function replay(k, name, args) {
  const item = state[k.list].find((x) => k.id(x) === name);
  if (!item) {
    $("load-error").textContent = `${name} is not in the config any more`;
    $("load-error").hidden = false;
    return;
  }
  select(k, item);
  const form = $("call-form");
  if (form && args) form.replay(args);
  form?.querySelector("button[type=submit]")?.focus();
}

// ---- drifts from the lock file ----------------------------------------------

// renderDrift shows the upstream definitions that differ from the lock file
// (sent to admins only), each with its diff, the findings on its text, and
// a button that approves it into the lock file.
const POLICY_TEXT = { quarantine: "quarantined: hidden until approved", allow: "served (on_drift = allow)", refuse: "its upstream is refused until approved" };

function renderDrift(d) {
  const box = $("drift");
  box.hidden = d.drifts.length === 0;
  $("drift-count").textContent = d.drifts.length ? String(d.drifts.length) : "";
  $("drift-lock").textContent = d.lock || "mcpd.lock";
  fill($("drift-list"), ...d.drifts.map((x) => {
    const status = el("span", { class: "keys" }, "");
    const button = el("button", { type: "button" }, "Approve");
    button.addEventListener("click", async () => {
      button.disabled = true;
      status.textContent = "approving…";
      try {
        const resp = await fetch(new URL("lock/approve", document.baseURI).href, {
          method: "POST",
          headers: { "Content-Type": "application/json", ...authHeaders() },
          body: JSON.stringify({ definitions: [{ source: x.source, kind: x.kind, name: x.name }] }),
        });
        if (!resp.ok) throw new Error((await resp.text()).trim() || "HTTP " + resp.status);
        status.textContent = "approved; the server reloads the lock file";
      } catch (e) {
        button.disabled = false;
        status.textContent = e.message;
        status.className = "keys error";
      }
    });
    return el(
      "div",
      { class: "item" },
      el("div", { class: "what" }, `${x.kind} ${x.name} of ${x.source}` + (x.served && x.served !== x.name ? ` (served as ${x.served})` : "")),
      el("div", {}, `${x.status} · ${POLICY_TEXT[x.policy] || x.policy}`),
      el("pre", {}, x.diff),
      ...x.findings.map((f) => el("div", { class: "finding" }, `${f.rule}${f.path ? " in " + f.path : ""}: ${f.message}`)),
      el("div", { class: "actions" }, button, status),
    );
  }));
}

// ---- the event stream -----------------------------------------------------

// follow reads the event stream with fetch (EventSource cannot send an
// Authorization header) and reconnects after an error, with backoff.
async function follow() {
  let wait = 500;
  for (;;) {
    try {
      const resp = await fetch(EVENTS_URL, { headers: { Accept: "text/event-stream", ...authHeaders() }, cache: "no-store" });
      if (resp.status === 401) {
        showTokenForm(true);
        setTokenState(new AuthError());
        await tokenEntered();
        continue;
      }
      if (!resp.ok || !resp.body) throw new Error("HTTP " + resp.status);
      wait = 500;
      // A reconnect starts from a fresh snapshot: clear what it replaces.
      $("calls").tBodies[0].replaceChildren();
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          handleEvent(buf.slice(0, cut));
          buf = buf.slice(cut + 2);
        }
      }
    } catch (e) {
      setPill("bad", "disconnected: " + e.message);
    }
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 10000);
  }
}

let live = false;

function handleEvent(frame) {
  let name = "message";
  const data = [];
  for (const line of frame.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (data.length === 0) return;
  const v = JSON.parse(data.join("\n"));
  if (name === "hello") {
    live = false;
    setTimeout(() => (live = true), 0);
  } else if (name === "status") renderStatus(v);
  else if (name === "drift") renderDrift(v);
  else if (name === "call") addCall(v, live);
}

function setPill(cls, text) {
  const pill = $("config-pill");
  pill.className = "pill " + cls;
  pill.textContent = text;
}

// ---- token ----------------------------------------------------------------

let tokenWaiters = [];

// setTokenState says, in the pill by the token form, that the server
// wants a token or refused the one given (auth: an AuthError), once.
function setTokenState(auth) {
  if (!auth) return;
  setPill("bad", token() ? "token refused: enter another" : "needs a token");
}

function showTokenForm(show) {
  $("token-form").hidden = !show;
}

function tokenEntered() {
  return new Promise((r) => tokenWaiters.push(r));
}

function setupToken() {
  const form = $("token-form");
  if (token()) {
    showTokenForm(true);
    $("token").placeholder = "token in use; enter another to replace it";
  }
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const v = $("token").value.trim();
    if (v) sessionStorage.setItem(TOKEN_KEY, v);
    else sessionStorage.removeItem(TOKEN_KEY);
    $("token").value = "";
    $("token").placeholder = v ? "token in use; enter another to replace it" : "API key or bearer token";
    const ws = tokenWaiters;
    tokenWaiters = [];
    ws.forEach((r) => r());
    loadServer();
    loadCatalog();
  });
}

// ---- keyboard -------------------------------------------------------------

// setupKeys: in the catalog, Up and Down move between items; Enter in the
// filter opens the first match; "/" anywhere outside a field goes to the
// filter.
function setupKeys() {
  const items = () => [...document.querySelectorAll(".catalog .items button")];
  $("filter").addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      items()[0]?.click();
    } else if (e.key === "ArrowDown") {
      e.preventDefault();
      items()[0]?.focus();
    }
  });
  document.querySelector(".catalog").addEventListener("keydown", (e) => {
    if ((e.key !== "ArrowDown" && e.key !== "ArrowUp") || !e.target.matches(".items button")) return;
    e.preventDefault();
    const all = items();
    const i = all.indexOf(e.target) + (e.key === "ArrowDown" ? 1 : -1);
    if (i >= 0 && i < all.length) all[i].focus();
    else if (i < 0) $("filter").focus();
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && !e.target.matches("input, textarea, select")) {
      e.preventDefault();
      $("filter").focus();
    }
  });
}

// ---- tasks (the io.modelcontextprotocol/tasks extension) -----------------

// TASK_META declares the tasks extension on the requests that use it: a
// tools/call made as a task, and tasks/get, tasks/update, tasks/cancel.
// Other requests do not declare it, so that a tool with an optional task
// block answers the form's plain calls as usual.
const TASKS_EXT = "io.modelcontextprotocol/tasks";
const TASK_META = {
  "io.modelcontextprotocol/clientCapabilities": { ...META["io.modelcontextprotocol/clientCapabilities"], extensions: { [TASKS_EXT]: {} } },
};
const TERMINAL = new Set(["completed", "failed", "cancelled"]);
const TASKS_URL = new URL("tasks", document.baseURI).href;
const shortID = (id) => id.slice(0, 8);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function taskRPC(method, taskId, more = {}) {
  return rpc(method, { taskId, ...more }, { "Mcp-Name": taskId }, { meta: TASK_META });
}

function fmtAge(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}

async function cancelTask(id, btn) {
  if (btn) btn.disabled = true;
  try {
    await taskRPC("tasks/cancel", id);
  } catch (e) {
    if (btn) {
      btn.disabled = false;
      btn.title = e.message;
    }
  }
  refreshTasks();
}

// runTask calls a tool as a task and follows it in box: its status and
// progress while it runs (with a Cancel button), its questions (answered
// with tasks/update), then its result. A tool without a task block
// answers as a plain call, shown as usual.
async function runTask({ name, args, headers, box }) {
  const start = performance.now();
  box.className = "result";
  fill(box, el("header", {}, "creating the task…"));
  let res;
  try {
    res = await rpc("tools/call", { name, arguments: args }, headers, { meta: TASK_META });
  } catch (e) {
    showFailure(box, e, performance.now() - start);
    return;
  }
  if (!res || res.resultType !== "task") {
    renderToolResult(box, res || {}, performance.now() - start);
    return;
  }
  const id = res.taskId;
  refreshTasks();
  let task = res;
  for (let round = 1; box.isConnected; ) {
    const ms = performance.now() - start;
    if (task.status === "completed") {
      renderToolResult(box, task.result || {}, ms);
      box.querySelector("header").append(el("span", { class: "task-id mono" }, "task " + shortID(id)));
      break;
    }
    if (task.status === "failed") {
      showFailure(box, new RPCError((task.error && task.error.code) || 0, (task.error && task.error.message) || task.statusMessage || "the task failed"), ms);
      break;
    }
    if (task.status === "cancelled") {
      box.className = "result cancelled";
      fill(box, el("header", {}, el("strong", { class: "outcome" }, "cancelled"), el("span", {}, `task ${shortID(id)}: ${task.statusMessage || "cancelled"}`), el("span", { class: "took" }, ms.toFixed(1) + " ms")));
      break;
    }
    if (task.status === "input_required" && task.inputRequests) {
      const answer = await askPanel(box, task, round++, ms);
      if (answer.cancel) {
        await cancelTask(id);
      } else {
        try {
          await taskRPC("tasks/update", id, { inputResponses: answer.responses });
        } catch (e) {
          showFailure(box, e, performance.now() - start);
          break;
        }
      }
    } else {
      const stop = el("button", { type: "button", class: "stop", onclick: () => cancelTask(id, stop) }, "Cancel");
      fill(box, el("header", {}, el("strong", { class: "outcome" }, task.status.replace("_", " ")), el("span", { class: "task-id mono" }, "task " + shortID(id)), el("span", { class: "task-msg" }, task.statusMessage || ""), stop));
      await sleep(Math.min(Math.max(task.pollIntervalMs || 1000, 250), 2000));
    }
    try {
      task = await taskRPC("tasks/get", id);
    } catch (e) {
      showFailure(box, e, performance.now() - start);
      break;
    }
  }
  refreshTasks();
}

// refreshTasks shows the caller's tasks (./tasks): those running first,
// each with its progress and a Cancel button, then those ended and kept.
let tasksTimer = 0;
async function refreshTasks() {
  clearTimeout(tasksTimer);
  let running = 0;
  try {
    const resp = await fetch(TASKS_URL, { headers: authHeaders(), cache: "no-store" });
    if (resp.status === 404) return; // a server without tasks view: stays hidden
    if (!resp.ok) throw new Error("HTTP " + resp.status);
    const { tasks, now } = await resp.json();
    const skew = Date.now() - new Date(now).getTime();
    $("tasks").hidden = false;
    const list = tasks.filter((t) => !TERMINAL.has(t.status)).concat(tasks.filter((t) => TERMINAL.has(t.status)));
    running = list.length - tasks.filter((t) => TERMINAL.has(t.status)).length;
    const rows = list.map((t) => {
      const ended = TERMINAL.has(t.status);
      const age = (ended ? new Date(t.updated).getTime() : Date.now() - skew) - new Date(t.created).getTime();
      const cancel = ended ? null : el("button", { type: "button", class: "cancel", title: "tasks/cancel " + t.id }, "Cancel");
      if (cancel) cancel.addEventListener("click", () => cancelTask(t.id, cancel));
      return el(
        "tr",
        { "data-task": t.id, "data-status": t.status, "data-tool": t.tool, class: ended ? "ended " + t.status : t.status },
        el("td", { class: "mono", title: t.id }, shortID(t.id)),
        el("td", { class: "name" }, t.tool),
        el("td", { class: "status" }, t.status.replace("_", " "), t.message ? el("div", { class: "task-msg" }, t.message) : null),
        el("td", { class: "num" }, fmtAge(age)),
        el("td", {}, cancel),
      );
    });
    $("tasks-table").tBodies[0].replaceChildren(...rows);
    $("tasks-table").hidden = rows.length === 0;
    $("tasks-empty").hidden = rows.length > 0;
    $("tasks-count").textContent = running ? `(${running} running)` : `(${rows.length})`;
  } catch {
    /* the server is away: the pill says so; try again later */
  }
  tasksTimer = setTimeout(refreshTasks, running ? 1000 : 5000);
}

// ---- start ----------------------------------------------------------------

// loadServer shows the server's name (its serverInfo) in the header, the
// address beside it, and its instructions.
async function loadServer() {
  let d;
  try {
    d = await rpc("server/discover");
  } catch {
    return; /* the lists say what is wrong */
  }
  const info = (d && d._meta && d._meta["io.modelcontextprotocol/serverInfo"]) || {};
  if (info.name) {
    fill($("server-name"), el("span", { class: "server" }, info.name), info.version ? el("span", { class: "ver" }, " " + info.version) : null, el("span", { class: "addr" }, " · " + location.host));
    document.title = info.name + " · mcpd console";
  }
  const hint = $("detail").querySelector(".hint");
  if (d && d.instructions && hint && !$("instructions")) hint.after(el("p", { class: "hint", id: "instructions" }, "Instructions: " + d.instructions));
}

async function start() {
  // The page's CSP forbids anything but its own script and style: say so
  // loudly if some part of it breaks that (the browser tests fail on it).
  document.addEventListener("securitypolicyviolation", (e) => console.error("CSP violation:", e.violatedDirective, e.blockedURI));
  setupToken();
  $("filter").addEventListener("input", renderCatalog);
  $("proto-filter").addEventListener("input", () => protoLog.filter());
  $("proto-clear").addEventListener("click", () => {
    $("proto-list").replaceChildren();
    protoLog.count();
  });
  $("toolset").addEventListener("change", (e) => {
    setToolset(e.target.value);
    state.selected = null;
    loadCatalog();
  });
  setupKeys();
  follow();
  $("server-name").textContent = location.host;
  await loadServer();
  await loadCatalog();
  refreshTasks();
  document.body.dataset.ready = "true";
}

start();
