// A program checked with the stdlib and built into its graph, with the plan Fuse makes of it by
// default: what the tests of compiler/graph start from.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "check/check.h"
#include "graph/graph.h"
#include "syntax/parser.h"

namespace weft::graph::testing {

struct Program {
  SourceManager sources;
  check::CheckResult result;
  Graph graph;
  Plan plan;
};

inline std::unique_ptr<Program> Build(const std::string& text) {
  auto p = std::make_unique<Program>();
  Diagnostics diagnostics;
  FileId id = p->sources.Add("test.weft", text);
  syntax::Ast ast = syntax::Parse(p->sources, id, diagnostics);
  check::CheckOptions options;
  options.stdlib_dir = WEFT_SOURCE_DIR "/stdlib";
  p->result = check::Check(p->sources, ast, diagnostics, options);
  REQUIRE_FALSE(diagnostics.has_errors());
  const core::Def* main = p->result.module.Find("main");
  REQUIRE(main != nullptr);
  auto graph = graph::Build(p->result.module, p->result.vars, *main);
  REQUIRE(graph);
  p->graph = std::move(*graph);
  p->plan = Fuse(p->graph);
  return p;
}

}  // namespace weft::graph::testing
