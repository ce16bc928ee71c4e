// Turns a title into the slug of its URL.
function slugify(title) {
  return title.toLowerCase().split(' ').join('-');
}

module.exports = { slugify };
