// A TypeScript SDK client of 2025-11-25's experimental tasks, run by
// TestLegacyTasksTypeScript: node legacy_tasks_client.mjs SDK_DIR ENDPOINT
// API_KEY PIDFILE. It prints one JSON object with what it saw; the Go test
// judges it.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [sdk, endpoint, apiKey, pidfile] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(join(sdk, 'dist/esm', p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { ElicitRequestSchema, CallToolResultSchema } = await load('types.js');

const out = { statuses: {}, notified: {}, elicitMeta: null };
const client = new Client({ name: 'ts-legacy-tasks', version: '1' }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  out.elicitMeta = req.params._meta ?? null;
  return { action: 'accept', content: { ok: true } };
});
client.fallbackNotificationHandler = async (n) => {
  if (n.method === 'notifications/tasks/status') {
    (out.notified[n.params.taskId] ??= []).push(n.params.status);
  }
};
const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
  requestInit: { headers: { 'X-Api-Key': apiKey } },
});
await client.connect(transport);
out.serverTasks = client.getServerCapabilities()?.tasks ?? null;

const tools = await client.listTools();
out.taskSupport = Object.fromEntries(tools.tools.map((t) => [t.name, t.execution?.taskSupport ?? null]));

// Runs a tool as a task through callToolStream to its end.
async function run(name, args, onCreated) {
  const seen = { id: null, statuses: [], result: null, error: null };
  for await (const m of client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, { task: { ttl: 60000 } })) {
    if (m.type === 'taskCreated') {
      seen.id = m.task.taskId;
      if (onCreated) await onCreated(m.task.taskId);
    } else if (m.type === 'taskStatus') {
      seen.statuses.push(m.task.status);
    } else if (m.type === 'result') {
      seen.result = m.result;
    } else if (m.type === 'error') {
      seen.error = String(m.error?.message ?? m.error);
    }
  }
  return seen;
}

out.build = await run('build', { seconds: 2 });
out.deploy = await run('deploy', {});
out.spawn = await run('spawn', { pidfile }, async (id) => {
  for (let i = 0; i < 300 && !existsSync(pidfile); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  out.pid = Number(readFileSync(pidfile, 'utf8').trim());
  out.cancel = await client.experimental.tasks.cancelTask(id);
});
const listed = await client.experimental.tasks.listTasks();
out.listed = listed.tasks.map((t) => t.taskId);
out.plain = await client.callTool({ name: 'build', arguments: { seconds: 0 } });
try {
  await client.callTool({ name: 'only_task', arguments: {} });
  out.onlyTaskPlain = 'answered';
} catch (e) {
  out.onlyTaskPlain = String(e?.message ?? e);
}
await client.close();
console.log(JSON.stringify(out));
