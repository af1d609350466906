// Prints docs/layouts.md's pictures (see pictures.h): `weft_layout_pictures > /tmp/p.txt`.
#include <iostream>

#include "pictures.h"

int main() {
  for (const auto& [title, text] : weft::layout::testing::Pictures())
    std::cout << "### " << title << "\n```\n" << text << "```\n\n";
  return 0;
}
