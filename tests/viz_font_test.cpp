// The 5x7 bitmap font: glyph bits inside their cell, coverage of the
// characters the figures use, and the extent of drawn text.
#include <gtest/gtest.h>

#include <string>

#include "viz/font.hpp"

namespace posenc::viz {
namespace {

struct Box {
  int x0 = 1 << 30, y0 = 1 << 30, x1 = -1, y1 = -1;  // inclusive; empty if x1 < 0
};

Box ink_box(const Image& image) {
  Box b;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      if (image.at(x, y) == kWhite) continue;
      b.x0 = std::min(b.x0, x), b.x1 = std::max(b.x1, x);
      b.y0 = std::min(b.y0, y), b.y1 = std::max(b.y1, y);
    }
  }
  return b;
}

const std::string kCovered =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    ".,:-+=*/%()[]<>_|'!?";

TEST(VizFont, EveryNeededCharacterHasAGlyphWithInk) {
  for (char c : kCovered) {
    const GlyphRows* g = find_glyph(c);
    ASSERT_NE(g, nullptr) << "'" << c << "'";
    int bits = 0;
    for (uint8_t row : *g) bits |= row;
    EXPECT_NE(bits, 0) << "'" << c << "' is blank";
  }
  const GlyphRows* space = find_glyph(' ');
  ASSERT_NE(space, nullptr);
  for (uint8_t row : *space) EXPECT_EQ(row, 0);
  EXPECT_EQ(find_glyph('\t'), nullptr);
}

TEST(VizFont, GlyphBitsStayInsideTheFiveColumns) {
  for (int c = 0; c < 128; ++c) {
    const GlyphRows* g = find_glyph(char(c));
    if (!g) continue;
    for (uint8_t row : *g) EXPECT_EQ(row & ~0x1F, 0) << "glyph " << c;
  }
}

// "H" touches all four sides of its cell, so "HxH" spans the full box.
TEST(VizFont, HorizontalTextFillsExactlyItsBox) {
  for (int scale : {1, 2, 3}) {
    Image image(120, 40);
    draw_text(image, 7, 5, "HxH", scale, kBlack);
    const Box b = ink_box(image);
    EXPECT_EQ(b.x0, 7);
    EXPECT_EQ(b.y0, 5);
    EXPECT_EQ(b.x1, 7 + text_length("HxH", scale) - 1);
    EXPECT_EQ(b.y1, 5 + text_thickness(scale) - 1);
  }
}

TEST(VizFont, UpwardTextFillsExactlyItsBox) {
  Image image(40, 120);
  draw_text(image, 3, 100, "HxH", 2, kBlack, TextDirection::upward);
  const Box b = ink_box(image);
  EXPECT_EQ(b.x0, 3);
  EXPECT_EQ(b.x1, 3 + text_thickness(2) - 1);
  EXPECT_EQ(b.y1, 99);
  EXPECT_EQ(b.y0, 100 - text_length("HxH", 2));
  // Reading upward, the first letter is at the bottom: "L" has its bar at
  // the bottom of the glyph, which turns to the right, at the lower end.
  Image l(20, 20);
  draw_text(l, 0, 20, "L", 1, kBlack, TextDirection::upward);
  EXPECT_EQ(l.at(6, 19), kBlack);  // the bar's first pixel
  EXPECT_EQ(l.at(6, 15), kBlack);  // its last
  EXPECT_EQ(l.at(0, 15), kWhite);  // the stem ends at the left, not the top
  EXPECT_EQ(l.at(0, 19), kBlack);
}

TEST(VizFont, UnknownCharactersDrawAsQuestionMarks) {
  Image a(20, 10), b(20, 10);
  draw_text(a, 0, 0, "\t", 1, kBlack);
  draw_text(b, 0, 0, "?", 1, kBlack);
  for (int y = 0; y < 10; ++y) {
    for (int x = 0; x < 20; ++x) EXPECT_EQ(a.at(x, y), b.at(x, y));
  }
  EXPECT_EQ(text_length("", 3), 0);
}

}  // namespace
}  // namespace posenc::viz
