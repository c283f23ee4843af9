/* lc_version(): the release of the linked library (include/longctx/version.h). */
#include "longctx.h"

const char *lc_version(void) { return LC_VERSION_STRING; }
