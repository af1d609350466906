// Overloaded{lambdas...}: one visitor from several lambdas, for std::visit over node variants.
#pragma once

namespace weft {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace weft
