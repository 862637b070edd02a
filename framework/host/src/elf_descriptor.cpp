#include "elf_descriptor.hpp"

#include <elf.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>

namespace kef::detail {
namespace {

constexpr std::string_view kSymbol = KEF_PLUGIN_DESCRIPTOR_SYMBOL;
constexpr const char* kMissing =
    "no kef plugin descriptor (symbol kef_plugin_descriptor not exported; was it declared with "
    "KEF_PLUGIN?)";

#if defined(__x86_64__)
constexpr std::uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr std::uint16_t kHostMachine = EM_AARCH64;
#elif defined(__powerpc64__)
constexpr std::uint16_t kHostMachine = EM_PPC64;
#elif defined(__riscv)
constexpr std::uint16_t kHostMachine = EM_RISCV;
#else
constexpr std::uint16_t kHostMachine = EM_NONE;  // unknown host: dlopen will judge
#endif

std::string machine_name(std::uint16_t machine) {
  switch (machine) {
    case EM_X86_64:
      return "x86-64";
    case EM_386:
      return "i386";
    case EM_AARCH64:
      return "AArch64";
    case EM_ARM:
      return "ARM";
    case EM_PPC64:
      return "PowerPC64";
    case EM_RISCV:
      return "RISC-V";
    default:
      return "machine " + std::to_string(machine);
  }
}

// A malformed file; caught in read_plugin_descriptor and turned into DescriptorRead::error.
struct Malformed {
  std::string what;
};

// Bounds-checked reads: every offset and size in the file is untrusted.
class FileReader {
 public:
  explicit FileReader(const std::filesystem::path& file) : in_(file, std::ios::binary) {
    if (!in_) throw Malformed{"cannot open the file for reading"};
    in_.seekg(0, std::ios::end);
    const auto end = in_.tellg();
    if (end < 0) throw Malformed{"cannot determine the file size"};
    size_ = static_cast<std::uint64_t>(end);
  }

  std::uint64_t size() const { return size_; }

  bool fits(std::uint64_t offset, std::uint64_t n) const { return offset <= size_ && n <= size_ - offset; }

  void read(std::uint64_t offset, std::uint64_t n, void* out, const char* what) {
    if (!fits(offset, n))
      throw Malformed{std::string("truncated ELF file (") + what + " lies beyond the end of the file)"};
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
    if (!in_) throw Malformed{std::string("cannot read ") + what};
  }

 private:
  std::ifstream in_;
  std::uint64_t size_ = 0;
};

// The ELF header, after checking that the file is a 64-bit shared library for this host with
// section headers of the expected size.
Elf64_Ehdr read_header(FileReader& reader) {
  unsigned char ident[EI_NIDENT] = {};
  if (reader.size() < SELFMAG) throw Malformed{"not an ELF file (too short)"};
  reader.read(0, std::min<std::uint64_t>(EI_NIDENT, reader.size()), ident, "the ELF identification");
  if (std::memcmp(ident, ELFMAG, SELFMAG) != 0) throw Malformed{"not an ELF file (bad magic number)"};
  if (reader.size() < sizeof(Elf64_Ehdr)) throw Malformed{"truncated ELF file (incomplete ELF header)"};
  if (ident[EI_CLASS] != ELFCLASS64) {
    throw Malformed{std::string("not a 64-bit ELF file (ELF class ") +
                    (ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : std::to_string(ident[EI_CLASS])) + ")"};
  }
  const unsigned char host_data = std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB;
  if (ident[EI_DATA] != host_data) throw Malformed{"ELF file has the wrong byte order for this host"};

  Elf64_Ehdr header;
  reader.read(0, sizeof header, &header, "the ELF header");
  if (header.e_type != ET_DYN) {
    throw Malformed{"not a shared library (ELF type " + std::to_string(header.e_type) + ")"};
  }
  if (kHostMachine != EM_NONE && header.e_machine != kHostMachine) {
    throw Malformed{"built for another architecture (expected " + machine_name(kHostMachine) + ", got " +
                    machine_name(header.e_machine) + ")"};
  }
  if (header.e_shoff == 0) throw Malformed{"ELF file has no section headers"};
  if (header.e_shentsize != sizeof(Elf64_Shdr)) {
    throw Malformed{"malformed ELF file (section header size " + std::to_string(header.e_shentsize) +
                    ", expected " + std::to_string(sizeof(Elf64_Shdr)) + ")"};
  }
  return header;
}

// The section header table (e_shnum, or section 0's sh_size when there are 0xff00 or more).
std::vector<Elf64_Shdr> read_sections(FileReader& reader, const Elf64_Ehdr& header) {
  // With 0xff00 or more sections, e_shnum is 0 and the real count sits in section 0's sh_size.
  std::uint64_t section_count = header.e_shnum;
  if (section_count == 0) {
    Elf64_Shdr first;
    reader.read(header.e_shoff, sizeof first, &first, "the section header table");
    section_count = first.sh_size;
  }
  if (section_count > reader.size() / sizeof(Elf64_Shdr)) {
    throw Malformed{"truncated ELF file (section header table lies beyond the end of the file)"};
  }
  std::vector<Elf64_Shdr> sections(section_count);
  reader.read(header.e_shoff, section_count * sizeof(Elf64_Shdr), sections.data(),
              "the section header table");
  return sections;
}

// The defined kef_plugin_descriptor symbol of the dynamic symbol table.
Elf64_Sym find_descriptor_symbol(FileReader& reader, const std::vector<Elf64_Shdr>& sections) {
  const std::uint64_t section_count = sections.size();
  const auto dynsym = std::find_if(sections.begin(), sections.end(),
                                   [](const Elf64_Shdr& s) { return s.sh_type == SHT_DYNSYM; });
  if (dynsym == sections.end()) throw Malformed{"no dynamic symbol table (.dynsym) in the file"};
  const std::uint64_t entry_size = dynsym->sh_entsize ? dynsym->sh_entsize : sizeof(Elf64_Sym);
  if (entry_size != sizeof(Elf64_Sym)) throw Malformed{"malformed .dynsym (unexpected entry size)"};
  if (dynsym->sh_link >= section_count || sections[dynsym->sh_link].sh_type != SHT_STRTAB) {
    throw Malformed{"malformed .dynsym (its string table is missing)"};
  }
  const Elf64_Shdr& strtab_header = sections[dynsym->sh_link];
  if (!reader.fits(strtab_header.sh_offset, strtab_header.sh_size)) {
    throw Malformed{"truncated ELF file (.dynstr lies beyond the end of the file)"};
  }
  if (!reader.fits(dynsym->sh_offset, dynsym->sh_size)) {
    throw Malformed{"truncated ELF file (.dynsym lies beyond the end of the file)"};
  }
  std::vector<char> strtab(strtab_header.sh_size);
  reader.read(strtab_header.sh_offset, strtab.size(), strtab.data(), ".dynstr");
  std::vector<Elf64_Sym> symbols(dynsym->sh_size / sizeof(Elf64_Sym));
  reader.read(dynsym->sh_offset, symbols.size() * sizeof(Elf64_Sym), symbols.data(), ".dynsym");

  auto name_of = [&](const Elf64_Sym& sym) -> std::string_view {
    if (sym.st_name >= strtab.size()) return {};
    const char* begin = strtab.data() + sym.st_name;
    const void* end = std::memchr(begin, '\0', strtab.size() - sym.st_name);
    if (!end) return {};
    return std::string_view(begin, static_cast<const char*>(end) - begin);
  };
  // An undefined reference to the name (a library that merely uses it) is not a descriptor.
  const auto symbol = std::find_if(symbols.begin(), symbols.end(), [&](const Elf64_Sym& s) {
    return s.st_shndx != SHN_UNDEF && name_of(s) == kSymbol;
  });
  if (symbol == symbols.end()) throw Malformed{kMissing};
  return *symbol;
}

kef_plugin_descriptor_t read_descriptor(const std::filesystem::path& file) {
  FileReader reader(file);
  const Elf64_Ehdr header = read_header(reader);
  const std::vector<Elf64_Shdr> sections = read_sections(reader, header);
  const std::uint64_t section_count = sections.size();
  const Elf64_Sym symbol = find_descriptor_symbol(reader, sections);

  if (symbol.st_shndx >= SHN_LORESERVE || symbol.st_shndx >= section_count) {
    throw Malformed{"symbol kef_plugin_descriptor is not in a regular section (index " +
                    std::to_string(symbol.st_shndx) + ")"};
  }
  const Elf64_Shdr& section = sections[symbol.st_shndx];
  if (section.sh_type == SHT_NOBITS) {
    throw Malformed{
        "symbol kef_plugin_descriptor has no contents in the file (it is zero-initialised "
        "or dynamically initialised; KEF_PLUGIN defines it as a constant)"};
  }
  constexpr std::uint64_t kHeaderBytes = 2 * sizeof(std::uint32_t);  // abi_version, struct_size
  if (symbol.st_size < kHeaderBytes) {
    throw Malformed{"symbol kef_plugin_descriptor is too small (" + std::to_string(symbol.st_size) +
                    " bytes)"};
  }
  if (symbol.st_value < section.sh_addr || symbol.st_value - section.sh_addr > section.sh_size ||
      symbol.st_size > section.sh_size - (symbol.st_value - section.sh_addr)) {
    throw Malformed{"malformed ELF file (symbol kef_plugin_descriptor lies outside its section)"};
  }

  kef_plugin_descriptor_t descriptor;
  std::memset(&descriptor, 0, sizeof descriptor);
  const std::uint64_t offset = section.sh_offset + (symbol.st_value - section.sh_addr);
  const std::uint64_t n = std::min<std::uint64_t>(symbol.st_size, sizeof descriptor);
  reader.read(offset, n, &descriptor, "the plugin descriptor");
  if (symbol.st_size < descriptor.struct_size) {
    throw Malformed{"symbol kef_plugin_descriptor is " + std::to_string(symbol.st_size) +
                    " bytes but its struct_size claims " + std::to_string(descriptor.struct_size)};
  }
  return descriptor;
}

}  // namespace

DescriptorRead read_plugin_descriptor(const std::filesystem::path& file) {
  DescriptorRead result;
  try {
    result.descriptor = read_descriptor(file);
  } catch (const Malformed& m) {
    result.error = m.what;
  } catch (const std::exception& e) {  // bad_alloc from an absurd section size, stream failures
    result.error = std::string("cannot read the file: ") + e.what();
  }
  return result;
}

}  // namespace kef::detail
