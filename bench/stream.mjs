#!/usr/bin/env node
// stream.mjs - streaming figures: time to first byte / first token and
// the spacing of the events as the client sees them.
//
//   node bench/stream.mjs --mode spacing --targets FILE [--only a,b] [--rounds 5]
//        [--per_round 4] [--spacing_ms 20]
//       Sequential streams, the targets alternated round by round.  For
//       each stream: time to the response head, to the first body byte, to
//       the first event with content ("first token"), and the gaps between
//       content events.  spacing_ms is what the upstream double was told;
//       a gap under half of it counts as "batched" (events that a proxy
//       held back and delivered together).
//
//   node bench/stream.mjs --mode hold --targets FILE --only NAME --n 256
//        [--ready FILE] [--timeout_ms 60000]
//       n concurrent streams to one target.  Writes the ready file when
//       every stream has delivered its first content event (so the caller
//       can sample memory while all n are in flight), then waits for the
//       ends.  Reports how many started, how many ended with [DONE].
//
// Prints one JSON object.  Node 20 built-ins only.
import fs from 'node:fs';
import http from 'node:http';
import { parseArgs, loadTargets, agentFor, request, median, pct, r3, nowMs } from './lib.mjs';

const opt = parseArgs(process.argv.slice(2), {
  mode: 'spacing', targets: '', only: '', rounds: 5, per_round: 4, spacing_ms: 20,
  n: 256, ready: '', timeout_ms: 60000,
});
const { body, targets } = loadTargets(opt.targets, opt.only);
const payload = JSON.stringify({ ...body, stream: true });

// An incremental SSE reader: calls onEvent(data, tMs) per "data:" event.
function sseReader(onEvent) {
  let buf = '';
  return (chunk, t) => {
    buf += chunk.toString('utf8');
    let i;
    while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i).replace(/^\r?\n\r?\n/, '');
      const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      if (data) onEvent(data, t);
    }
  };
}

function hasContent(data) {
  if (data === '[DONE]') return false;
  try {
    const j = JSON.parse(data);
    const c = j.choices && j.choices[0] && j.choices[0].delta && j.choices[0].delta.content;
    return typeof c === 'string' && c.length > 0;
  } catch (_) {
    return false;
  }
}

async function oneStream(t, agent, timeoutMs, onFirstContent) {
  const s = { head: null, firstByte: null, firstContent: null, content: [], done: false, status: 0 };
  const feed = sseReader((data, tm) => {
    if (data === '[DONE]') s.done = true;
    else if (hasContent(data)) {
      if (s.firstContent == null) {
        s.firstContent = tm;
        if (onFirstContent) onFirstContent();
      }
      s.content.push(tm);
    }
  });
  const r = await request(t, payload, agent, (res, tm) => { s.head = tm; s.status = res.statusCode; },
    (c, tm) => { if (s.firstByte == null) s.firstByte = tm; feed(c, tm); }, timeoutMs);
  s.total = r.ms;
  return s;
}

async function spacing() {
  const agents = new Map(targets.map((t) => [t.name, agentFor()]));
  const acc = Object.fromEntries(targets.map((t) => [t.name, {
    head: [], firstByte: [], firstContent: [], gaps: [], incomplete: 0, errors: 0, n: 0,
  }]));
  for (const t of targets) await oneStream(t, agents.get(t.name), 30000).catch(() => {});
  for (let r = 0; r < opt.rounds; r++) {
    for (const t of targets) {
      for (let i = 0; i < opt.per_round; i++) {
        const a = acc[t.name];
        try {
          // A keep-alive socket the server closed while the other paths
          // had their turn fails at once with ECONNRESET: once more.
          const s = await oneStream(t, agents.get(t.name), 30000).catch((e) => {
            if (e.code !== 'ECONNRESET' && e.code !== 'EPIPE') throw e;
            return oneStream(t, agents.get(t.name), 30000);
          });
          a.n++;
          if (s.status !== 200 || !s.done) a.incomplete++;
          a.head.push(s.head);
          a.firstByte.push(s.firstByte);
          if (s.firstContent != null) a.firstContent.push(s.firstContent);
          for (let k = 1; k < s.content.length; k++) a.gaps.push(s.content[k] - s.content[k - 1]);
        } catch (e) {
          a.errors++;
        }
      }
    }
  }
  for (const ag of agents.values()) ag.destroy();
  const out = { spacing_ms: opt.spacing_ms, targets: {} };
  for (const t of targets) {
    const a = acc[t.name];
    out.targets[t.name] = {
      n: a.n, incomplete: a.incomplete, errors: a.errors,
      head_ms: r3(median(a.head)),
      first_byte_ms: r3(median(a.firstByte)),
      first_token_ms: r3(median(a.firstContent)),
      gap_median_ms: r3(median(a.gaps)),
      gap_p5_ms: r3(pct(a.gaps, 0.05)),
      gap_p95_ms: r3(pct(a.gaps, 0.95)),
      gaps: a.gaps.length,
      batched: a.gaps.filter((g) => g < opt.spacing_ms / 2).length,
    };
  }
  return out;
}

async function hold() {
  if (targets.length !== 1) throw new Error('--mode hold takes exactly one target (--only)');
  const t = targets[0];
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  let started = 0;
  let readyAt = null;
  const t0 = nowMs();
  const markReady = () => {
    readyAt = nowMs() - t0;
    if (opt.ready) fs.writeFileSync(opt.ready, `${started}\n`);
  };
  const ps = [];
  for (let i = 0; i < opt.n; i++) {
    ps.push(oneStream(t, agent, opt.timeout_ms, () => {
      started++;
      if (started === opt.n) markReady();
    }).catch((e) => ({ error: e.message })));
  }
  const rs = await Promise.all(ps);
  if (readyAt == null && opt.ready) fs.writeFileSync(opt.ready, `${started}\n`);
  agent.destroy();
  const ok = rs.filter((s) => !s.error && s.status === 200 && s.done);
  return {
    target: t.name, n: opt.n, started, completed: ok.length,
    errors: rs.filter((s) => s.error).length,
    all_started_ms: r3(readyAt),
    first_token_median_ms: r3(median(ok.map((s) => s.firstContent))),
    total_median_ms: r3(median(ok.map((s) => s.total))),
  };
}

const out = opt.mode === 'hold' ? await hold() : await spacing();
process.stdout.write(`${JSON.stringify(out)}\n`);
