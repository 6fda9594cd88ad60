// Compiled into every candidate (it needs the generated model's header): the few calls
// chorus_main.cpp makes on the model, so the main itself is compiled once per machine.
// CHORUS_MODEL names the model's class (default Vtb, whose header this file then includes);
// CHORUS_MODEL_SUFFIX, when a group's members share one translation unit, makes each member's
// functions distinct (chorus_model_new__m3 ...): each member's link maps the plain names to its own.
#ifndef CHORUS_MODEL
#define CHORUS_MODEL Vtb
#include "Vtb.h"
#endif
#ifndef CHORUS_MODEL_SUFFIX
#define CHORUS_MODEL_SUFFIX
#endif
#define CHORUS_CAT2(a, b) a##b
#define CHORUS_CAT(a, b) CHORUS_CAT2(a, b)
#define CHORUS_FN(name) CHORUS_CAT(name, CHORUS_MODEL_SUFFIX)

extern "C" {
void* CHORUS_FN(chorus_model_new)(VerilatedContext* contextp) { return new CHORUS_MODEL{contextp, ""}; }
void CHORUS_FN(chorus_model_eval)(void* m) { static_cast<CHORUS_MODEL*>(m)->eval(); }
bool CHORUS_FN(chorus_model_events_pending)(void* m) { return static_cast<CHORUS_MODEL*>(m)->eventsPending(); }
uint64_t CHORUS_FN(chorus_model_next_time_slot)(void* m) { return static_cast<CHORUS_MODEL*>(m)->nextTimeSlot(); }
void CHORUS_FN(chorus_model_final)(void* m) { static_cast<CHORUS_MODEL*>(m)->final(); }
void CHORUS_FN(chorus_model_delete)(void* m) { delete static_cast<CHORUS_MODEL*>(m); }
}

#undef CHORUS_FN
#undef CHORUS_CAT
#undef CHORUS_CAT2
#undef CHORUS_MODEL_SUFFIX
#undef CHORUS_MODEL
