/* The public, read-only view of express streams (tarn/express_inspect.h):
 * the front door to the chain, epoch, log-star and poison records that the
 * writer, fence and settlement keep (epoch.c, xlogstar.c, fence.c). */
#include "tarn/express_inspect.h"

#include "express/express_internal.h"
#include "express/fence.h"

_Static_assert(TARN_EXPRESS_STAR_MAX == TARN__X_STAR_MAX &&
                   TARN_EXPRESS_SLOT_KEY_MAX == TARN__X_SLOT_KEY_MAX,
               "public and internal express limits agree");

int tarn_express_log_star(tarn_meta *m, uint64_t log_id, char *star, size_t n) {
  return tarn__xlog_star_get(m, log_id, star, n);
}

int tarn_express_chain_head(tarn_meta *m, const char *star, uint64_t *epoch) {
  return tarn__xchain_head(m, star, TARN__X_CLASS_EXPRESS, epoch);
}

int tarn_express_epoch_get(tarn_meta *m, const char *star, uint64_t epoch,
                           tarn_express_epoch_info *out) {
  tarn__xepoch ep;
  int rc = tarn__xepoch_load(m, star, TARN__X_CLASS_EXPRESS, epoch, &ep);
  if (rc)
    return rc;
  *out = (tarn_express_epoch_info){.fenced = ep.state == TARN__XEPOCH_FENCED,
                                   .has_cut = ep.has_cut,
                                   .cut = ep.cut,
                                   .checkpoint = ep.checkpoint,
                                   .trimmed = ep.trimmed};
  /* the verdict `tarn express settle` and the gates use (settle.c) */
  out->settled = out->fenced && ep.has_cut && ep.checkpoint >= ep.cut;
  tarn__xepoch_free(&ep);
  return 0;
}

int tarn_express_slot_key(char *out, size_t n, const char *star, uint64_t epoch, uint64_t slot) {
  return tarn__xslot_key(out, n, star, epoch, slot);
}

int tarn_express_poison_is(const uint8_t *p, size_t n) { return tarn__xpoison_is(p, n); }

int tarn_express_poison_parse(const uint8_t *p, size_t n, char *star, uint64_t *epoch,
                              uint64_t *slot) {
  return tarn__xpoison_parse(p, n, star, epoch, slot);
}
