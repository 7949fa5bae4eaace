// The official openai npm client (v6) against a real `kvengine serve` on loopback: completions,
// chat, streaming, n > 1, errors, and cancellation — after which no KV block stays in use.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, metric } from './server.mjs';

let server;
let client;

before(async () => {
  server = await startServer(['--max-num-seqs', '8']);
  client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  await server?.stop();
});

async function blocksInUse() {
  return metric(server.base, 'kvengine:kv_blocks_used');
}

test('lists the model', async () => {
  const models = await client.models.list();
  assert.ok(models.data.length >= 1);
  assert.equal(models.data[0].object, 'model');
});

test('completion with usage', async () => {
  const r = await client.completions.create({
    model: 'tiny', prompt: 'Once upon a time', max_tokens: 8, temperature: 0,
  });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices.length, 1);
  assert.equal(typeof r.choices[0].text, 'string');
  assert.ok(['length', 'stop'].includes(r.choices[0].finish_reason));
  assert.equal(r.usage.completion_tokens, 8);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

test('greedy completions are deterministic and the prefix cache serves the repeat', async () => {
  const prompt = 'the quick brown fox jumps over the lazy dog '.repeat(6);
  const a = await client.completions.create({ model: 'tiny', prompt, max_tokens: 6, temperature: 0 });
  const b = await client.completions.create({ model: 'tiny', prompt, max_tokens: 6, temperature: 0 });
  assert.equal(a.choices[0].text, b.choices[0].text);
  assert.ok(b.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(b.usage));
});

test('chat completion', async () => {
  const r = await client.chat.completions.create({
    model: 'tiny',
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello!' }],
    max_tokens: 5, temperature: 0,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
});

test('streaming ends with usage when asked', async () => {
  const stream = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 12,
    stream: true, stream_options: { include_usage: true }, temperature: 0,
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(finish);
  assert.ok(usage && usage.completion_tokens === 12, JSON.stringify(usage));
  assert.equal(typeof text, 'string');
});

test('n > 1 returns n choices', async () => {
  const r = await client.completions.create({
    model: 'tiny', prompt: 'Hello there', max_tokens: 4, n: 3, temperature: 1, seed: 7,
  });
  assert.equal(r.choices.length, 3);
  assert.deepEqual(r.choices.map((c) => c.index).sort(), [0, 1, 2]);
});

test('bad parameters are 400 errors naming the field', async () => {
  await assert.rejects(
    client.completions.create({ model: 'tiny', prompt: 'x', temperature: 7 }),
    (e) => e.status === 400 && /temperature/.test(e.message));
  await assert.rejects(
    client.completions.create({ model: 'tiny', prompt: 'x', max_tokens: 10000000 }),
    (e) => e.status === 400);
  await assert.rejects(
    client.completions.create({ model: 'tiny', prompt: [999999], max_tokens: 2 }),
    (e) => e.status === 400);
  // The server keeps serving.
  const ok = await client.completions.create({ model: 'tiny', prompt: 'x', max_tokens: 1 });
  assert.equal(ok.choices.length, 1);
});

test('aborting a stream frees its KV blocks', async () => {
  const controller = new AbortController();
  const stream = await client.completions.create(
    { model: 'tiny', prompt: 'A long story:', max_tokens: 400, stream: true, temperature: 1 },
    { signal: controller.signal });
  let seen = 0;
  try {
    for await (const _ of stream) {
      if (++seen === 3) controller.abort();
    }
  } catch (e) {
    // The client reports the abort as an error; a stream that ended first (EOS) is fine too.
    assert.ok(controller.signal.aborted, String(e));
  }
  assert.ok(seen >= 1);
  // Within a few steps the server notices and releases the request's blocks.
  const deadline = Date.now() + 10000;
  let used = await blocksInUse();
  while (used !== 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    used = await blocksInUse();
  }
  assert.equal(used, 0);
});
