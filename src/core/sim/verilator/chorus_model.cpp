// Compiled into every candidate (it needs the generated Vtb.h): the few calls chorus_main.cpp
// makes on the model, so the main itself is compiled once per machine.
#include "Vtb.h"

void* chorus_model_new(VerilatedContext* contextp) { return new Vtb{contextp, ""}; }
void chorus_model_eval(void* m) { static_cast<Vtb*>(m)->eval(); }
bool chorus_model_events_pending(void* m) { return static_cast<Vtb*>(m)->eventsPending(); }
uint64_t chorus_model_next_time_slot(void* m) { return static_cast<Vtb*>(m)->nextTimeSlot(); }
void chorus_model_final(void* m) { static_cast<Vtb*>(m)->final(); }
void chorus_model_delete(void* m) { delete static_cast<Vtb*>(m); }
