// The toolwire status page: renders the live feed (/status/events, Server-Sent Events) into the
// page shell. Plain script, no build step. Everything from the server is put in as text, never HTML.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  let grant = [];
  let snapshot;
  /** Server clock minus this page's clock, ms (running times are computed from the server's). */
  let skew = 0;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined) continue;
      if (key === 'class') node.className = value;
      else if (key === 'onclick') node.addEventListener('click', value);
      else node.setAttribute(key, value);
    }
    for (const child of children) if (child !== undefined && child !== null) node.append(child);
    return node;
  }

  function duration(ms) {
    if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
    const s = Math.floor(ms / 1000);
    if (s < 60) return `${s} s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m} min ${s % 60} s`;
    return `${Math.floor(m / 60)} h ${m % 60} min`;
  }

  function bytes(n) {
    if (n < 1024) return `${n} B`;
    if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
    return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  }

  const time = (ms) => new Date(ms).toLocaleTimeString();
  const now = () => Date.now() + skew;
  const granted = (tool) => grant.includes('*') || grant.includes(tool);

  function table(caption, headers, rows) {
    if (rows.length === 0) return el('p', { class: 'empty' }, `No ${caption.toLowerCase()}.`);
    const head = el('tr', {}, ...headers.map((h) => el('th', { scope: 'col' }, h)));
    const body = rows.map((cells) => el('tr', {}, ...cells.map((c, i) => el('td', { 'data-label': headers[i] }, c))));
    return el('table', {}, el('caption', { class: 'visually-hidden' }, caption), el('thead', {}, head), el('tbody', {}, ...body));
  }

  function renderHosts() {
    const hosts = snapshot.hosts;
    const cluster = snapshot.node === undefined ? '' : ` on ${snapshot.nodes?.length ?? 1} nodes; this page is from node ${snapshot.node}`;
    $('hosts-n').textContent = `(${hosts.length}${cluster})`;
    if (hosts.length === 0) return [el('p', { class: 'empty' }, 'No tool host is connected.')];
    return hosts.map((h) => {
      const facts = [
        ...(h.node === undefined ? [] : [['Node', h.node]]),
        ['Address', h.remote ?? 'unknown'],
        ['Connected since', time(h.connectedAt)],
        ['Last heartbeat', h.lastHeartbeatAt === undefined ? 'none yet' : `${duration(now() - h.lastHeartbeatAt)} ago`],
        ['Protocol', h.protocol === undefined ? '?' : `v${h.protocol}`],
        ['Tools', String(h.tools.length)],
        ['Calls in flight', String(h.inFlight)],
      ];
      const tools = h.tools.map((t) => {
        const notes = Object.entries(t.annotations ?? {})
          .filter(([, v]) => v === true || typeof v === 'string')
          .map(([k, v]) => el('span', { class: 'badge' }, v === true ? k.replace(/Hint$/, '') : `${k}: ${v}`));
        return el(
          'li',
          {},
          el('code', {}, t.name),
          t.title ? el('span', { class: 'title' }, ` ${t.title}`) : undefined,
          ...notes,
          t.description ? el('div', { class: 'desc' }, t.description) : undefined,
        );
      });
      return el(
        'article',
        { class: 'host', 'aria-label': `host ${h.name}` },
        el('h3', {}, h.name),
        el('dl', {}, ...facts.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
        tools.length > 0 ? el('ul', { class: 'tools', 'aria-label': `tools of ${h.name}` }, ...tools) : el('p', { class: 'empty' }, 'No tools advertised.'),
      );
    });
  }

  async function stop(call, button) {
    button.disabled = true;
    $('live').textContent = `stopping ${call.id}…`;
    try {
      const res = await fetch('/status/stop', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: call.id, agent: call.agent }),
        credentials: 'same-origin',
      });
      const answer = await res.json().catch(() => ({}));
      $('live').textContent = res.ok ? `stop sent to ${call.id}` : `stop refused: ${answer.error ?? res.status}`;
    } catch (error) {
      $('live').textContent = `stop failed: ${error}`;
    }
    button.disabled = false;
  }

  /** A call's host, with its node in a cluster. */
  const hostCell = (c) => (c.host === undefined ? '—' : c.node === undefined ? c.host : `${c.host} (node ${c.node})`);

  function renderCalls() {
    const calls = snapshot.calls;
    $('calls-n').textContent = `(${snapshot.callsInFlight})`;
    const rows = calls.map((c) => [
      el('code', {}, c.id),
      c.tool,
      hostCell(c),
      c.agent,
      el('span', { 'data-started': String(c.startedAt) }, duration(now() - c.startedAt)),
      bytes(c.bytes),
      granted(c.tool)
        ? el(
            'button',
            { type: 'button', 'data-key': `stop:${c.agent}/${c.id}`, 'aria-label': `Stop call ${c.id} (${c.tool})`, onclick: (e) => stop(c, e.currentTarget) },
            'Stop',
          )
        : el('span', { class: 'muted' }, 'not granted'),
    ]);
    return [table('Calls in flight', ['Call', 'Tool', 'Host', 'Caller', 'Running for', 'Output', 'Stop'], rows)];
  }

  function renderRecent() {
    const rows = snapshot.recent.map((c) => [
      el('code', {}, c.id),
      c.tool,
      hostCell(c),
      c.agent,
      el('span', { class: c.exitCode === 0 ? 'ok' : 'fail', 'data-exit': String(c.exitCode) }, `exit ${c.exitCode}${c.failure ? ` (${c.failure})` : ''}`),
      duration(c.endedAt - c.startedAt),
      time(c.endedAt),
    ]);
    return [table('Recent calls', ['Call', 'Tool', 'Host', 'Caller', 'Exit', 'Took', 'Ended'], rows)];
  }

  function render() {
    // Keep the keyboard focus on the same control across a re-render.
    const focused = document.activeElement?.getAttribute?.('data-key');
    $('hosts').replaceChildren(...renderHosts());
    $('calls').replaceChildren(...renderCalls());
    $('recent').replaceChildren(...renderRecent());
    if (focused) document.querySelector(`[data-key="${CSS.escape(focused)}"]`)?.focus();
  }

  // Running times tick without waiting for the server.
  setInterval(() => {
    for (const span of document.querySelectorAll('[data-started]')) span.textContent = duration(now() - Number(span.dataset.started));
  }, 1000);

  const events = new EventSource('/status/events');
  events.addEventListener('open', () => ($('live').textContent = 'live'));
  events.addEventListener('you', (e) => (grant = JSON.parse(e.data).grant));
  events.addEventListener('snapshot', (e) => {
    snapshot = JSON.parse(e.data);
    skew = snapshot.at - Date.now();
    render();
  });
  events.addEventListener('error', async () => {
    $('live').textContent = 'reconnecting…';
    // A feed refused for want of a session: back to the login form.
    const res = await fetch('/status/snapshot', { credentials: 'same-origin' }).catch(() => undefined);
    if (res && res.status === 401) {
      events.close();
      window.location.assign('/status');
    }
  });
})();
