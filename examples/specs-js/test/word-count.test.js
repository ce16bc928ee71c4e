const test = require('node:test');
const assert = require('node:assert');
const { wordCount } = require('../src/word-count');

test('counts words separated by spaces', () => {
  assert.strictEqual(wordCount('one two three'), 3);
});

test('an empty or blank text has no words', () => {
  assert.strictEqual(wordCount(''), 0);
  assert.strictEqual(wordCount('   '), 0);
});

test('new lines, tabs and runs of spaces separate words too', () => {
  assert.strictEqual(wordCount('one\ntwo\t three  four'), 4);
});
