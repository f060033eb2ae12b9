// rng.js - a small seeded PRNG (mulberry32), so a seeded run repeats:
// makeRng(seed) gives a function of [0, 1); seed 0 gives Math.random.
// The double draws its random faults with it, the soak drivers
// (tests/soak/driver.mjs, long.mjs) their request mix.
'use strict';

function makeRng(seed) {
  if (!seed) return Math.random;
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

module.exports = { makeRng };
