// A shared library named like a backend that exports no wm_plugin_query:
// the host must refuse it as not a wmap backend.
const int no_symbol_marker = 1;
