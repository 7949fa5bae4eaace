#include "report/svg.h"

#include <gtest/gtest.h>

namespace kvengine {
namespace {

TEST(SvgTest, NumbersAndEscapes) {
  EXPECT_EQ(SvgNum(12.25), "12.2");  // printf rounds half to even on the binary value.
  EXPECT_EQ(SvgNum(-3), "-3.0");
  EXPECT_EQ(XmlEscape("a<b & 'c' \"d\">"), "a&lt;b &amp; &apos;c&apos; &quot;d&quot;&gt;");
  EXPECT_EQ(SvgText(1, 2, "end", 11, "<x>", " fill=\"red\""),
            "<text x=\"1.0\" y=\"2.0\" text-anchor=\"end\" font-size=\"11\" fill=\"red\">&lt;x&gt;"
            "</text>\n");
  EXPECT_EQ(SvgLine(0, 1, 2, 3, "#333"),
            "<line x1=\"0.0\" y1=\"1.0\" x2=\"2.0\" y2=\"3.0\" stroke=\"#333\"/>\n");
  EXPECT_EQ(SvgRect(1, 2, 3, -4, "#fff"),
            "<rect x=\"1.0\" y=\"2.0\" width=\"3.0\" height=\"0.0\" fill=\"#fff\"/>\n");
  EXPECT_EQ(SvgRect(0, 0, 1, 1, "red", "a<b"),
            "<rect x=\"0.0\" y=\"0.0\" width=\"1.0\" height=\"1.0\" fill=\"red\"><title>a&lt;b"
            "</title></rect>\n");
  EXPECT_EQ(SvgOpen(10, 20).rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10.0\"", 0),
            0u);
}

TEST(SvgTest, NiceStepCoversTheMaximum) {
  EXPECT_DOUBLE_EQ(NiceStep(100, 5), 20);
  EXPECT_DOUBLE_EQ(NiceStep(101, 5), 50);
  EXPECT_DOUBLE_EQ(NiceStep(7, 5), 2);
  EXPECT_DOUBLE_EQ(NiceStep(0.9, 4), 0.5);
  EXPECT_DOUBLE_EQ(NiceStep(1, 5), 0.2);
  EXPECT_GT(NiceStep(0, 5), 0);
  for (double v : {0.003, 1.0, 17.0, 999.0, 12345.0}) EXPECT_GE(NiceStep(v, 5) * 5, v);
}

}  // namespace
}  // namespace kvengine
