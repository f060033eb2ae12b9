// portkey-preload.cjs - loaded with `node -r` in front of Portkey's gateway
// (bench/run.sh).  Two things, neither of which changes how Portkey
// handles a request:
//
// 1. Loopback only.  Portkey's start-server.js listens on every interface
//    (hono's serve() without a hostname); the benchmark must not.  A
//    listen() on a bare port is turned into a listen on 127.0.0.1.
// 2. Nothing else: the streaming fix is a patch of the built file, see
//    bench/run.sh (portkey_patch).
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' && args[1] === undefined)
    args[1] = '127.0.0.1';
  else if (typeof args[0] === 'number' && typeof args[1] !== 'string')
    args.splice(1, 0, '127.0.0.1');
  else if (args[0] && typeof args[0] === 'object' && !Array.isArray(args[0]) &&
           args[0].port !== undefined && !args[0].host && !args[0].path)
    args[0] = { ...args[0], host: '127.0.0.1' };
  return listen.apply(this, args);
};
