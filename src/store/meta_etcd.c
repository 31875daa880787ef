/* placeholder */
#include "store/meta_vfs.h"
#include "util/error.h"
static int o(tarn_meta *m, const char *t) { return tarn__err(TARN_EUNSUPPORTED, "etcd: not built"); }
const tarn__meta_vfs tarn__meta_vfs_etcd = {TARN__META_VFS_VERSION, "etcd", o, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
