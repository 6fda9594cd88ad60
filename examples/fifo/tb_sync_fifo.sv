// Fill, overfill, drain, and interleave; the overfill deliberately trips the DUT's assertion.
`timescale 1ns/1ps
module tb_sync_fifo;
  logic clk = 0, rst_n = 0, push = 0, pop = 0;
  logic [7:0] wdata = 0;
  logic [7:0] rdata;
  logic full, empty;
  sync_fifo #(.DEPTH(4), .WIDTH(8)) uut (.*);
  always #5 clk = ~clk;
  initial begin
    #12 rst_n = 1;
    repeat (5) begin @(negedge clk); push = 1; wdata = $urandom; end
    @(negedge clk); push = 0;
    repeat (5) begin @(negedge clk); pop = !empty; end
    @(negedge clk); pop = 0;
    repeat (30) begin
      @(negedge clk);
      push = !full && ($urandom_range(0, 1) == 1); wdata = $urandom;
      pop = !empty && ($urandom_range(0, 1) == 1);
    end
    wdata = 8'hFF; push = 1; @(negedge clk); push = 0; wdata = 8'h00;
    repeat (4) begin @(negedge clk); pop = !empty; end
    $finish;
  end
endmodule
