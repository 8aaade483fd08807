# Sourced by the CLI's shell tests (tools/cli/*_test.sh): the set-up they share.
#   require_fashion_mnist     exits 77 (CTest's skip) when dataset-fashion-mnist is not installed
#   fresh_work_dir DIR        an empty DIR for the test's files
require_fashion_mnist() {
  [ -e /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz ] ||
    { echo "dataset-fashion-mnist is not installed"; exit 77; }
}
fresh_work_dir() {
  rm -rf "$1" && mkdir -p "$1"
}
