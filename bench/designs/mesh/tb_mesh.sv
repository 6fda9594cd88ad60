`timescale 1ns/1ps
module tb_mesh;
  logic clk = 0, rst_n = 0;
  logic [15:0] a_west [4];
  logic [15:0] b_north [4];
  logic [1:0] mode = 0;
  logic [31:0] acc_sum;
  logic [15:0] crc_xor;
  logic [15:0] a_drv [4];
  logic [15:0] b_drv [4];
  mesh uut (.*);
  always #5 clk = ~clk;
  always @(negedge clk) begin a_west <= a_drv; b_north <= b_drv; end
  initial begin
    foreach (a_drv[i]) begin a_drv[i] = 0; b_drv[i] = 0; end
    #12 rst_n = 1;
    repeat (200) begin
      @(negedge clk);
      foreach (a_drv[i]) begin a_drv[i] = $urandom; b_drv[i] = $urandom; end
      mode = $urandom_range(0, 3);
    end
    $finish;
  end
endmodule
