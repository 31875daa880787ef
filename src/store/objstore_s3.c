/* s3:// object store (placeholder until the S3 backend lands). */
#include "store/objstore_vfs.h"
#include "util/error.h"

static int s_open(const char *uri, tarn_objstore **out) {
  (void)out;
  if (uri[5] == 0)
    return tarn__err(TARN_EINVAL, "object store \"%s\": no bucket", uri);
  return tarn__err(TARN_EUNSUPPORTED, "object store \"%s\": s3 not built yet", uri);
}

const struct tarn__objstore_vfs tarn__objstore_s3 = {
    TARN__OBJSTORE_VFS_VERSION, "s3", s_open, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
