// A deliberately weak testbench: reset, then count up a few cycles. Never loads, never counts down.
`timescale 1ns/1ps
module tb_counter_weak;
  logic clk = 0, rst_n = 0, en = 0, load = 0, up = 1;
  logic [7:0] din = 0;
  logic [7:0] count;
  logic wrap;
  counter uut (.*);
  always #5 clk = ~clk;
  initial begin
    #12 rst_n = 1;
    en = 1;
    repeat (4) @(posedge clk);
    $finish;
  end
endmodule
