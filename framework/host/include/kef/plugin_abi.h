/* The plain-C plugin descriptor. The host reads it straight from the plugin file (ELF .dynsym) and
 * checks it BEFORE the library is loaded, so a plugin built against another kef, compiler, standard
 * library ABI or Eigen never runs any code in the host's process. The struct therefore has no
 * pointers (which would need relocation): strings are fixed-size arrays. Fields are only ever
 * appended; abi_version and struct_size come first and never move. */
#ifndef KEF_PLUGIN_ABI_H
#define KEF_PLUGIN_ABI_H

#include <stdint.h>

#define KEF_PLUGIN_ABI_VERSION 1u
#define KEF_PLUGIN_DESCRIPTOR_SYMBOL "kef_plugin_descriptor"
#define KEF_PLUGIN_REGISTER_SYMBOL "kef_register_plugin"

#define KEF_PLUGIN_COMPILER_GCC 1u
#define KEF_PLUGIN_COMPILER_CLANG 2u
#define KEF_PLUGIN_COMPILER_OTHER 99u

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kef_plugin_descriptor_t {
  uint32_t abi_version;
  uint32_t struct_size;
  uint32_t kef_major;
  uint32_t kef_minor;
  uint32_t compiler_id;
  uint32_t compiler_major;
  uint32_t compiler_minor;
  int32_t cxx11_abi; /* _GLIBCXX_USE_CXX11_ABI, or -1 */
  uint32_t eigen_world;
  uint32_t eigen_major;
  uint32_t eigen_minor;
  uint32_t pointer_size;
  uint32_t eigen_max_align_bytes; /* changes how Eigen allocates: must match */
  char name[64];
  char version[32];
  char summary[160];
} kef_plugin_descriptor_t;

#ifdef __cplusplus
}
#endif

#endif /* KEF_PLUGIN_ABI_H */
