#pragma once
// Printing as Python prints, for the seed programs: each seed prints with print(...) or shows a
// notebook cell's value, and the golden tests compare our output with that text byte for byte.
//
//   seeds::print("dy/da:", dy_da);        // print("dy/da:", dy_da)  -> dy/da: tf.Tensor(4.0, ...)
//   seeds::print(grads);                  // print([None, None])     -> [None, None]
//   seeds::display(grad.at("b"));         // a cell ending in grad['b'] shows repr(grad['b'])
//
// str() and repr() follow Python: print() uses str() of each argument; a list shows repr() of its
// elements; a notebook cell shows repr() of its value. A missing gradient is None.

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace seeds {

namespace tf = tapeflow;

// ---- repr ---------------------------------------------------------------------------------------
inline std::string repr(const std::string& s) { return "'" + s + "'"; }  // names never hold a quote
inline std::string repr(const tf::Tensor& t) { return tf::repr(t); }
inline std::string repr(const tf::Gradient& g) { return g ? tf::repr(*g) : "None"; }
template <class T>
std::string repr(const std::vector<T>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += repr(items[i]);
  }
  return out + "]";
}

// ---- str ----------------------------------------------------------------------------------------
inline std::string str(const std::string& s) { return s; }
inline std::string str(const char* s) { return s; }
inline std::string str(const tf::Tensor& t) { return tf::to_string(t); }
inline std::string str(const tf::Gradient& g) { return tf::to_string(g); }
/// `t.numpy()`: NumPy's str() of the array, e.g. `[ 4. 108.]` or `6.0`.
inline std::string str(const tf::NumpyText& a) { return tf::numpy_str(a.tensor); }
/// TensorShape prints as a tuple: `(3, 2)`.
inline std::string str(const tf::Shape& s) { return s.to_string(); }
template <class T>
std::string str(const std::vector<T>& items) {
  return repr(items);
}

/// Python's print(*args): str() of each argument, separated by one space, then a newline.
template <class... Args>
void print(const Args&... args) {
  std::string line;
  bool first = true;
  auto append = [&](const std::string& s) {
    if (!first) line += ' ';
    line += s;
    first = false;
  };
  (append(str(args)), ...);
  std::cout << line << '\n';
}

/// What a notebook shows for a cell whose last line is an expression: its repr().
template <class T>
void display(const T& value) {
  std::cout << repr(value) << '\n';
}

}  // namespace seeds
