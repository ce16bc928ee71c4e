const test = require('node:test');
const assert = require('node:assert');
const { slugify } = require('../src/slugify');

test('words are joined by hyphens', () => {
  assert.strictEqual(slugify('Hello World'), 'hello-world');
});

test('punctuation is dropped', () => {
  assert.strictEqual(slugify('Hello, World!'), 'hello-world');
});

test('runs of spaces make one hyphen, none at the ends', () => {
  assert.strictEqual(slugify('  Many   spaces  '), 'many-spaces');
});
