// watch-fetch.mjs - a fetch for the openai client that watches the raw
// response bytes for "data: [DONE]" without changing them (the SDK hides
// it, and a stream that ends without it was cut).  Shared by chat.mjs and
// tests/soak/driver.mjs.
//
//   watchingFetch(state[, onResponse])
//     state.done becomes true when "data: [DONE]" went by; onResponse(res)
//     is called with each Response before its body is read.
export function watchingFetch(state, onResponse) {
  return async (url, init) => {
    const res = await fetch(url, init);
    if (onResponse) onResponse(res);
    if (!res.body) return res;
    const dec = new TextDecoder();
    let tail = '';
    const watch = new TransformStream({
      transform(chunk, ctl) {
        const text = tail + dec.decode(chunk, { stream: true });
        if (/(^|\n)data: ?\[DONE\]/.test(text)) state.done = true;
        tail = text.slice(-64);
        ctl.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(watch), {
      status: res.status, statusText: res.statusText, headers: res.headers,
    });
  };
}
