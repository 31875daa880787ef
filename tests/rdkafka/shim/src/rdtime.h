/* librdkafka-internal header the example includes; rd.h has what it needs */
#include "rd.h"
