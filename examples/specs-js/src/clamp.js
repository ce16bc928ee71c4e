// Keeps a number within [low, high].
function clamp(value, low, high) {
  if (value < low) return high;
  if (value > high) return low;
  return value;
}

module.exports = { clamp };
