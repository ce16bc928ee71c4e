// How many words a text has: runs of characters between white space.
function wordCount(text) {
  return text.split(' ').length;
}

module.exports = { wordCount };
