// Synchronous FIFO with full/empty flags. Pushing into a full FIFO or popping an empty one
// violates the design's assumptions; the assertions below flag it.
`timescale 1ns/1ps
`default_nettype none
module sync_fifo #(
  parameter int DEPTH = 4,
  parameter int WIDTH = 8
) (
  input  wire              clk,
  input  wire              rst_n,
  input  wire              push,
  input  wire [WIDTH-1:0]  wdata,
  input  wire              pop,
  output logic [WIDTH-1:0] rdata,
  output wire              full,
  output wire              empty
);
  localparam int AW = $clog2(DEPTH);
  logic [WIDTH-1:0] mem [DEPTH];
  logic [AW:0] wptr, rptr;

  assign full  = (wptr[AW] != rptr[AW]) && (wptr[AW-1:0] == rptr[AW-1:0]);
  assign empty = (wptr == rptr);

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      wptr <= '0;
      rptr <= '0;
    end else begin
      if (push && !full) begin
        mem[wptr[AW-1:0]] <= wdata;
        wptr <= wptr + 1'b1;
      end
      if (pop && !empty) begin
        rptr <= rptr + 1'b1;
      end
    end
  end

  assign rdata = mem[rptr[AW-1:0]];

  always @(posedge clk) begin
    if (rst_n) begin
      assert (!(push && full)) else $error("push while full");
      assert (!(pop && empty)) else $error("pop while empty");
    end
  end
endmodule
`default_nettype wire
