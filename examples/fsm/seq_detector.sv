// Moore FSM that detects the serial pattern 1011 (overlapping) and counts detections.
`timescale 1ns/1ps
module seq_detector (
  input  wire       clk,
  input  wire       reset,     // synchronous, active-high
  input  wire       bit_in,
  input  wire       valid,
  output reg        detected,
  output reg  [3:0] hits
);
  typedef enum logic [2:0] {IDLE, S1, S10, S101, FOUND} state_t;
  state_t state, next;

  always @(*) begin
    next = state;
    if (valid) begin
      case (state)
        IDLE:  next = bit_in ? S1    : IDLE;
        S1:    next = bit_in ? S1    : S10;
        S10:   next = bit_in ? S101  : IDLE;
        S101:  next = bit_in ? FOUND : S10;
        FOUND: next = bit_in ? S1    : S10;
        default: next = IDLE;
      endcase
    end
  end

  always @(posedge clk) begin
    if (reset) begin
      state <= IDLE;
      hits  <= 4'd0;
    end else begin
      state <= next;
      if (next == FOUND) hits <= hits + 4'd1;
    end
  end

  always @(*) detected = (state == FOUND);
endmodule
