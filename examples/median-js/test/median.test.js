const test = require('node:test');
const assert = require('node:assert');
const { median } = require('../src/median');

test('odd length', () => {
  assert.strictEqual(median([3, 1, 2]), 2);
});

test('even length averages the middle pair', () => {
  assert.strictEqual(median([4, 1, 3, 2]), 2.5);
});

test('sorts numbers numerically', () => {
  assert.strictEqual(median([10, 9, 1]), 9);
});

test('does not change its argument', () => {
  const input = [3, 1, 2];
  median(input);
  assert.deepStrictEqual(input, [3, 1, 2]);
});
