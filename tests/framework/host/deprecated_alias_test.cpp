// Deprecated aliases (ComponentInfo::deprecated_aliases): a former type name builds the component that
// replaced it, in tables and in saved models, with a one-line warning naming the new type, once per
// registry; an alias may not take a name that is already registered.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/registry.hpp"
#include "test_models.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

// A component of an interface of the test's own, which records the type its factory was asked for.
struct Widget {
  static constexpr const char* kInterface = "alias_widget";
  virtual ~Widget() = default;
  std::string asked_for;
  double size = 0;
};

// Standard error while `f` runs.
template <class F>
std::string stderr_of(F&& f) {
  testing::internal::CaptureStderr();
  f();
  return testing::internal::GetCapturedStderr();
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

void register_widget(PluginRegistrar& r) {
  ComponentInfo info;
  info.type = "widget";
  info.summary = "test widget";
  info.keys = {KeySpec::number("size", "the widget's size", 1.0)};
  info.deprecated_aliases = {"gadget", "gizmo"};
  r.add<Widget>(info, [](const Config& cfg, const BuildContext&) {
    auto w = std::make_unique<Widget>();
    w->asked_for = *cfg.type();
    w->size = cfg.number("size");
    return w;
  });
}

TEST(DeprecatedAlias, AFormerNameBuildsTheNewComponentAndWarnsOncePerRegistry) {
  Registry r;
  r.register_builtin("widgets", register_widget);
  std::shared_ptr<Widget> first;
  const std::string warned = stderr_of([&] {
    first = r.make<Widget>(test::config_from("type = \"gadget\"\nsize = 2.5"), {});
    r.make<Widget>(test::config_from("type = \"gadget\"\nsize = 3.0"), {});
    EXPECT_EQ(r.info_for(Widget::kInterface, test::config_from("type = \"gadget\"")).type, "widget");
  });
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->size, 2.5);
  EXPECT_EQ(first->asked_for, "gadget");  // the factory sees the name the table used
  EXPECT_EQ(count_of(warned, "\n"), 1u) << warned;
  EXPECT_NE(warned.find("[kef] warning: "), std::string::npos) << warned;
  EXPECT_NE(warned.find("alias widget type `gadget` is deprecated"), std::string::npos) << warned;
  EXPECT_NE(warned.find("use `widget` (plugin widgets)"), std::string::npos) << warned;

  // The other alias is a name of its own; the new name never warns; find() resolves aliases silently.
  EXPECT_EQ(
      count_of(stderr_of([&] { r.make<Widget>(test::config_from("type = \"gizmo\""), {}); }), "`gizmo`"), 1u);
  EXPECT_EQ(stderr_of([&] {
              r.make<Widget>(test::config_from("type = \"widget\""), {});
              ASSERT_NE(r.find(Widget::kInterface, "gadget"), nullptr);
              EXPECT_EQ(r.find(Widget::kInterface, "gadget")->type, "widget");
            }),
            "");
  // Listings show the type once, with its aliases.
  const std::vector<ComponentInfo> listed = r.components(Widget::kInterface);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].deprecated_aliases, (std::vector<std::string>{"gadget", "gizmo"}));

  Registry other;
  other.register_builtin("widgets", register_widget);
  EXPECT_EQ(count_of(stderr_of([&] { other.make<Widget>(test::config_from("type = \"gadget\""), {}); }),
                     "deprecated"),
            1u);
}

TEST(DeprecatedAlias, AnAliasCannotTakeARegisteredNameNorATypeAnAlias) {
  Registry r;
  r.register_builtin("widgets", register_widget);
  auto another = [](const std::string& type, std::vector<std::string> aliases) {
    return [type, aliases](PluginRegistrar& reg) {
      ComponentInfo info;
      info.type = type;
      info.summary = "another widget";
      info.deprecated_aliases = aliases;
      reg.add<Widget>(info, [](const Config&, const BuildContext&) { return std::make_unique<Widget>(); });
    };
  };
  const std::string type_is_alias =
      test::message_of<PluginError>([&] { r.register_builtin("late", another("gadget", {})); });
  EXPECT_NE(type_is_alias.find("registers alias_widget/gadget, which builtin"), std::string::npos)
      << type_is_alias;
  const std::string alias_is_type =
      test::message_of<PluginError>([&] { r.register_builtin("late", another("sprocket", {"widget"})); });
  EXPECT_NE(alias_is_type.find("alias_widget/widget (a deprecated alias of alias_widget/sprocket)"),
            std::string::npos)
      << alias_is_type;
  const std::string own =
      test::message_of<PluginError>([&] { r.register_builtin("late", another("cog", {"cog"})); });
  EXPECT_NE(own.find("declares its own type as a deprecated alias"), std::string::npos) << own;
  // Nothing of a refused registration remains: the names are still free, or still the widget's.
  EXPECT_EQ(r.find(Widget::kInterface, "sprocket"), nullptr);
  EXPECT_EQ(r.find(Widget::kInterface, "cog"), nullptr);
  EXPECT_EQ(r.find(Widget::kInterface, "gadget")->type, "widget");
}

// A model saved under a former type name (and with [origins] naming the former type and plugin)
// loads through the loader that replaced it.
TEST(DeprecatedAlias, AModelSavedUnderAFormerTypeNameLoads) {
  auto loaders = [](PluginRegistrar& reg) {
    ComponentInfo info;
    info.type = "unit_gaussian";
    info.summary = "test model loader";
    info.deprecated_aliases = {"standard_normal"};
    reg.add_model_loader(info, [](const ModelReader& reader, Registry&) -> ModelPtr {
      const Index d = reader.positive_integer("dim");
      return std::make_shared<test::GaussianModel>(Vector::Zero(d), Matrix::Identity(d, d));
    });
  };
  const fs::path dir = test::temp_dir("deprecated_alias_model") / "model";
  fs::create_directories(dir);
  std::ofstream(dir / "model.toml") << "type = \"standard_normal\"\ndim = 3\n"
                                    << "[origins.model]\ninterface = \"model\"\ntype = \"standard_normal\"\n"
                                    << "plugin = \"normals\"\n";
  Registry r;
  r.register_builtin("gaussians", loaders);
  ModelPtr model;
  const std::string warned = stderr_of([&] { model = load_model(dir, r); });
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->dim(), 3);
  EXPECT_EQ(count_of(warned, "\n"), 1u) << warned;
  EXPECT_NE(warned.find((dir / "model.toml").string() + ": model type `standard_normal` is deprecated"),
            std::string::npos)
      << warned;
  EXPECT_NE(warned.find("use `unit_gaussian`"), std::string::npos) << warned;
}

}  // namespace
}  // namespace kef
