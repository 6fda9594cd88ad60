// A thorough testbench: every branch, both wrap directions, every bit of every port both ways.
`timescale 1ns/1ps
module tb_counter;
  logic clk = 0, rst_n = 0, en = 0, load = 0, up = 1;
  logic [7:0] din = 0;
  logic [7:0] count;
  logic wrap;
  counter uut (.*);
  always #5 clk = ~clk;
  initial begin
    #12 rst_n = 1;
    // count up through a full wrap
    en = 1; up = 1;
    repeat (260) @(negedge clk);
    // count down through a full wrap
    up = 0;
    repeat (260) @(negedge clk);
    // load a few patterns
    load = 1;
    foreach (din[i]) begin din = 8'(1 << i); @(negedge clk); end
    din = 8'hFF; @(negedge clk);
    din = 8'h00; @(negedge clk);
    load = 0;
    // hold
    en = 0; repeat (3) @(negedge clk);
    // asynchronous reset in the middle of a run
    en = 1; #2 rst_n = 0; #6 rst_n = 1;
    repeat (3) @(negedge clk);
    $finish;
  end
endmodule
