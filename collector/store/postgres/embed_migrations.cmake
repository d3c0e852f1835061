# Writes a C++ file holding every migrations/*.sql as a string, in file-name order.
# Called with -DOUT=... -DSRC_DIR=...
file(GLOB files "${SRC_DIR}/*.sql")
list(SORT files)
set(body "")
foreach(f ${files})
  get_filename_component(name "${f}" NAME_WE)
  file(READ "${f}" sql)
  string(APPEND body "      {\"${name}\", R\"smbfleet_sql(${sql})smbfleet_sql\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from collector/store/migrations/*.sql. Do not edit.\n#include \"collector/store/postgres/migrations.h\"\n\nnamespace smbfleet::collector {\n\nconst std::vector<Migration>& BuiltinMigrations() {\n  static const std::vector<Migration>* kMigrations = new std::vector<Migration>{\n${body}  };\n  return *kMigrations;\n}\n\n}  // namespace smbfleet::collector\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
