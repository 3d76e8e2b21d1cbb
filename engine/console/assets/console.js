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
// Server data is only ever put in the page as text (textContent, attribute
// values): never as HTML.

const PROTOCOL = "2026-07-28";
const META = {
  "io.modelcontextprotocol/protocolVersion": PROTOCOL,
  "io.modelcontextprotocol/clientCapabilities": {},
  "mcpd/client": "console",
};
const TOKEN_KEY = "mcpd-console-token";
const MAX_CALLS = 100;
const IMAGE_TYPES = /^image\/(png|jpeg|gif|webp|avif|bmp)$/;
const AUDIO_TYPES = /^audio\/(wav|x-wav|mpeg|mp3|ogg|webm|flac|aac)$/;
const MCP_URL = new URL("../mcp", document.baseURI).href;
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
// RPCError (a JSON-RPC error) or an Error (HTTP).
async function rpc(method, params = {}, extraHeaders = {}) {
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
  const body = JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: { ...META } } });
  const resp = await fetch(MCP_URL, { method: "POST", headers, body, credentials: "same-origin", cache: "no-store" });
  const type = resp.headers.get("Content-Type") || "";
  const text = await resp.text();
  let msgs = [];
  if (type.includes("text/event-stream")) msgs = parseSSE(text);
  else if (type.includes("json")) {
    try {
      const m = JSON.parse(text);
      msgs = Array.isArray(m) ? m : [m];
    } catch {
      /* fall through to the HTTP error */
    }
  }
  const msg = msgs.find((m) => m && m.id === id) || msgs.find((m) => m && m.error && m.id == null);
  if (resp.status === 401) {
    showTokenForm(true);
    throw new Error("this server needs a token: enter an API key or bearer token at the top right");
  }
  if (msg && msg.error) throw new RPCError(msg.error.code, msg.error.message, msg.error.data);
  if (!resp.ok || !msg) throw new Error(`HTTP ${resp.status}: ${text.trim().slice(0, 500) || resp.statusText}`);
  return msg.result;
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
  const errors = [];
  await Promise.all(
    KINDS.map(async (k) => {
      try {
        state[k.list] = await listAll(k.method, k.key);
      } catch (e) {
        state[k.list] = [];
        errors.push(`${k.method}: ${e.message}`);
      }
    }),
  );
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
        return el("li", {}, el("button", { type: "button", title: x.description || id, "aria-current": current ? "true" : false, "data-kind": k.kind, "data-id": id, onclick: () => select(k, x) }, x.name && k.kind !== "tool" && k.kind !== "prompt" ? x.name : id));
      }),
    );
    if (shown.length === 0) ul.append(el("li", { class: "empty" }, all.length ? "no match" : "none"));
    $(k.list + "-count").textContent = all.length ? `(${all.length})` : "";
  }
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

// buildFields returns the form's fields for an object schema, and a
// function that reads the arguments back from them.
function buildFields(schema) {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const readers = [];
  const rows = Object.entries(props).map(([name, prop]) => {
    const id = "f" + ++fieldSeq;
    const type = typeOf(prop);
    const req = required.has(name);
    const help = [prop.description, constraintText(prop)].filter(Boolean).join(" · ");
    let input;
    let read;
    const def = prop.default;
    if (prop.enum && (type === "string" || type === "number" || type === "integer")) {
      input = el("select", { id, name }, el("option", { value: "" }, req ? "— choose —" : "— not set —"), prop.enum.map((v) => el("option", { value: JSON.stringify(v), selected: def !== undefined && JSON.stringify(def) === JSON.stringify(v) }, String(v))));
      read = () => (input.value === "" ? undefined : JSON.parse(input.value));
    } else if (type === "boolean") {
      input = el("select", { id, name }, el("option", { value: "" }, "— not set —"), el("option", { value: "true", selected: def === true }, "true"), el("option", { value: "false", selected: def === false }, "false"));
      read = () => (input.value === "" ? undefined : input.value === "true");
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
    } else if (type === "string") {
      const long = (prop.maxLength || 0) > 200 || /sql|query|body|text|content/i.test(name);
      input = long ? el("textarea", { id, name, rows: 3 }, def !== undefined ? String(def) : "") : el("input", { id, name, type: "text", value: def !== undefined ? String(def) : "" });
      read = () => (input.value === "" ? undefined : input.value);
    } else if (type === "array" && prop.items && ["string", "number", "integer"].includes(typeOf(prop.items)) && !prop.items.properties) {
      const itemType = typeOf(prop.items);
      input = el("textarea", { id, name, rows: 3, placeholder: "one value per line" }, Array.isArray(def) ? def.join("\n") : "");
      read = () => {
        const lines = input.value.split("\n").map((l) => l.trim()).filter((l) => l !== "");
        if (lines.length === 0) return undefined;
        return itemType === "string" ? lines : lines.map((l) => (Number.isFinite(Number(l)) ? Number(l) : l));
      };
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
    }
    if (req) input.setAttribute("aria-required", "true");
    if (help) input.setAttribute("aria-describedby", id + "-help");
    readers.push([name, read]);
    return el(
      "div",
      { class: "field" },
      el("label", { for: id }, name, req ? el("span", { class: "req", title: "required" }, " *") : null, " ", el("span", { class: "type" }, type || "any")),
      input,
      help ? el("div", { class: "help", id: id + "-help" }, help) : null,
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
  return { rows, read };
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
function callForm({ schema, button, onSubmit }) {
  const { rows, read } = buildFields(schema);
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
  const form = el(
    "form",
    { class: "call", novalidate: true },
    el("div", { class: "modes" }, el("label", {}, useJSON, " edit the arguments as JSON")),
    fieldsBox,
    jsonBox,
    el("div", { class: "actions" }, submit, status),
  );
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
    status.textContent = "calling…";
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
    const ms = performance.now() - start;
    box.className = "result bad";
    const head = e instanceof RPCError ? `protocol error ${e.code}` : "request failed";
    fill(box, 
      el("header", {}, el("strong", { class: "outcome" }, head), el("span", { class: "took" }, ms.toFixed(1) + " ms")),
      el("div", { class: "block" }, el("pre", { class: "text" }, e.message)),
      e.data !== undefined ? el("div", { class: "block" }, el("div", { class: "label" }, "data"), el("pre", {}, pretty(e.data))) : null,
    );
  }
}

function contentBlock(c) {
  const label = (t) => el("div", { class: "label" }, t);
  switch (c.type) {
    case "text":
      return el("div", { class: "block" }, label("text"), el("pre", { class: "text" }, c.text));
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

// ---- views ----------------------------------------------------------------

function header(kind, title, sub) {
  return [el("div", { class: "kind" }, kind), el("h3", { id: "detail-h" }, title), sub ? el("p", { class: "desc" }, sub) : null];
}

function toolView(t) {
  const box = resultBox("tool");
  const form = callForm({
    schema: t.inputSchema,
    button: "Call " + t.name,
    onSubmit: (args) => timed(box, () => rpc("tools/call", { name: t.name, arguments: args }, paramHeaders(t.inputSchema, args)), (res, ms) => renderToolResult(box, res, ms)),
  });
  form.id = "call-form";
  return el(
    "article",
    { "aria-labelledby": "detail-h", "data-tool": t.name },
    header("tool", t.name, t.description),
    tags([t.title && t.title !== t.name ? "title: " + t.title : null, ...annotationTags(t.annotations)]),
    schemaBlock("input schema", t.inputSchema, false),
    schemaBlock("output schema", t.outputSchema, false),
    form,
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
    onSubmit: (args) => timed(box, () => rpc("prompts/get", { name: p.name, arguments: args }), (res, ms) => renderPrompt(box, res, ms)),
  });
  return el("article", { "aria-labelledby": "detail-h" }, header("prompt", p.name, p.description), tags([p.title ? "title: " + p.title : null]), form, box);
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
  if (s.generation !== state.generation) {
    const first = state.generation === 0;
    state.generation = s.generation;
    if (!first) loadCatalog();
  }
}

function caretLine(src, col, endCol) {
  let pad = "";
  for (let i = 0; i < col - 1 && i < src.length; i++) pad += src[i] === "\t" ? "\t" : " ";
  return pad + "^".repeat(endCol > col ? endCol - col : 1);
}

// ---- recent calls ---------------------------------------------------------

function addCall(c, fresh) {
  const tbody = $("calls").tBodies[0];
  const bad = c.outcome !== "ok";
  // Another principal's call comes without who made it (see
  // docs/security.md, "The console's call stream").
  const who = [c.other ? "another caller" : c.principal, c.client ? null : c.transport].filter(Boolean).join(" · ");
  const row = el(
    "tr",
    { class: (bad ? "bad" : "ok") + (fresh ? " fresh" : ""), "data-name": c.name, "data-client": c.client || "" },
    el("td", { class: "mono" }, fmtTime(c.time)),
    el("td", { class: "name", title: c.kind }, c.kind === "tool" ? c.name : `${c.kind} ${c.name}`),
    el("td", { class: "who" }, who, c.client ? el("span", { class: "console-tag" }, " · " + c.client) : null),
    el("td", { class: "num" }, c.duration_ms.toFixed(1)),
    el("td", { class: "outcome", title: c.error || "" }, c.outcome.replace("_", " ")),
  );
  tbody.prepend(row);
  while (tbody.rows.length > MAX_CALLS) tbody.deleteRow(-1);
  $("calls-count").textContent = `(${tbody.rows.length})`;
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
        setPill("bad", "needs a token");
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
  else if (name === "call") addCall(v, live);
}

function setPill(cls, text) {
  const pill = $("config-pill");
  pill.className = "pill " + cls;
  pill.textContent = text;
}

// ---- token ----------------------------------------------------------------

let tokenWaiters = [];

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

// ---- start ----------------------------------------------------------------

async function start() {
  // The page's CSP forbids anything but its own script and style: say so
  // loudly if some part of it breaks that (the browser tests fail on it).
  document.addEventListener("securitypolicyviolation", (e) => console.error("CSP violation:", e.violatedDirective, e.blockedURI));
  setupToken();
  $("filter").addEventListener("input", renderCatalog);
  setupKeys();
  follow();
  try {
    const d = await rpc("server/discover");
    if (d && d.instructions) $("detail").querySelector(".hint")?.after(el("p", { class: "hint" }, "Instructions: " + d.instructions));
  } catch {
    /* the lists below say what is wrong */
  }
  $("server-name").textContent = location.host;
  await loadCatalog();
  document.body.dataset.ready = "true";
}

start();
