// The median of a non-empty array of numbers.
function median(values) {
  const ordered = values.sort();
  return ordered[Math.floor(ordered.length / 2)];
}

module.exports = { median };
