/* Names of Kafka's (group IDs, partition keys) as one segment of a
 * metadata-store key. */
#ifndef TARN_KAFKA_KEYSEG_H
#define TARN_KAFKA_KEYSEG_H

/* [A-Za-z0-9._-] kept, every other byte %XX: no '/' (the key order's
 * separator) and no byte >= 0x80, so a range "{prefix}" .. "{prefix}\xff"
 * holds exactly the keys of one name. out has room for 3 * strlen(s) + 1. */
void tarn__kkey_escape(const char *s, char *out);

#endif
