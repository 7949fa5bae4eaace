// Small helpers for the project's self-contained SVG charts (`bench kv --svg`, `bench-serve
// --out`): numbers, escaped text and "nice" axis steps. No scripts, external fonts or styles, so
// a chart renders the same in a browser and in a README.
//
// Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

namespace kvengine {

// A coordinate with one decimal ("12.5").
std::string SvgNum(double v);

// Escapes the five XML special characters (labels come from options and servers: never trust
// them).
std::string XmlEscape(std::string_view s);

// The smallest axis step of the form {1, 2, 5} x 10^k such that `ticks` steps cover
// `max_value` (> 0; smaller values are treated as a tiny positive number).
double NiceStep(double max_value, int ticks);

// <text x y text-anchor font-size extra>escaped s</text>\n; `extra` is raw attributes, each
// starting with a space.
std::string SvgText(double x, double y, std::string_view anchor, int size, std::string_view s,
                    std::string_view extra = "");

// <line .../>\n with a stroke colour and raw extra attributes.
std::string SvgLine(double x1, double y1, double x2, double y2, std::string_view stroke,
                    std::string_view extra = "");

// <rect .../>\n filled with `fill` (negative sizes drawn as 0); a non-empty `title` becomes its
// tooltip (escaped).
std::string SvgRect(double x, double y, double width, double height, std::string_view fill,
                    std::string_view title = "");

// The opening <svg> element of a width x height canvas with a white background.
std::string SvgOpen(double width, double height);

}  // namespace kvengine
