const test = require('node:test');
const assert = require('node:assert');
const { clamp } = require('../src/clamp');

test('a value inside the range is kept', () => {
  assert.strictEqual(clamp(2, 0, 5), 2);
});

test('a value below the range becomes the low end', () => {
  assert.strictEqual(clamp(-3, 0, 5), 0);
});

test('a value above the range becomes the high end', () => {
  assert.strictEqual(clamp(9, 0, 5), 5);
});
