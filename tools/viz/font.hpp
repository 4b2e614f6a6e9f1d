// A 5x7 bitmap font (digits, letters, common symbols), drawn scaled up by an
// integer factor, horizontally or rotated a quarter turn counter-clockwise
// (reading bottom to top, for vertical axis labels).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "image.hpp"

namespace posenc::viz {

inline constexpr int kGlyphWidth = 5;
inline constexpr int kGlyphHeight = 7;
inline constexpr int kGlyphAdvance = kGlyphWidth + 1;  // one column of spacing

// Row r (0 = top) of a glyph; bit 4 is the leftmost column, bit 0 the
// rightmost.
using GlyphRows = std::array<uint8_t, kGlyphHeight>;

// The glyph of c, or nullptr if the font lacks it (drawn as '?').
const GlyphRows* find_glyph(char c);

enum class TextDirection { horizontal, upward };

// Extent along the text direction: advance * length - spacing, times scale
// (0 for empty text).
int text_length(std::string_view text, int scale);
inline int text_thickness(int scale) { return kGlyphHeight * scale; }

// Draws text whose top-left corner (as read) is at (x, y) for horizontal
// text. Upward text occupies the box [x, x + thickness) x [y - length, y):
// (x, y) is its bottom-left corner on the page.
void draw_text(Image& image, int x, int y, std::string_view text, int scale, Rgb color,
               TextDirection direction = TextDirection::horizontal);

}  // namespace posenc::viz
