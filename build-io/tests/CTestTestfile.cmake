# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build-io/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
subdirs("bad_plugins")
subdirs("io")
subdirs("sdk_consumer")
subdirs("synthetic")
subdirs("unit")
