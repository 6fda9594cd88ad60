// Benchmark stimulus for the CVDP dev design cvdp_copilot_vending_machine_0006 (bench/data/
// cvdp-cid012-dev): reset, then seeded random purchases, coins and cancels. Written for bench/sim
// (a testbench the timings can reuse), not tuned for coverage.
`timescale 1ns / 1ps
module tb_vending_machine;
  logic clk = 0, rst = 1, item_button = 0, cancel = 0;
  logic [2:0] item_selected = 0;
  logic [3:0] coin_input = 0;
  wire dispense_item, return_change, error, return_money;
  wire [4:0] item_price, change_amount;
  wire [2:0] dispense_item_id;

  vending_machine uut (.*);

  always #5 clk = ~clk;

  task automatic press(input logic [2:0] item);
    @(negedge clk) item_selected = item; item_button = 1;
    @(negedge clk) item_button = 0;
  endtask

  task automatic coin(input logic [3:0] value);
    @(negedge clk) coin_input = value;
    @(negedge clk) coin_input = 0;
  endtask

  initial begin
    repeat (3) @(negedge clk);
    rst = 0;
    for (int i = 0; i < 200; i++) begin
      press(3'($urandom_range(0, 5)));
      repeat ($urandom_range(1, 4)) coin(4'(($urandom_range(0, 4) == 0) ? 3 : (int'($urandom_range(0, 3)) == 0 ? 1 : ($urandom_range(0, 1) ? 5 : 10))));
      if ($urandom_range(0, 6) == 0) begin
        @(negedge clk) cancel = 1;
        @(negedge clk) cancel = 0;
      end
      repeat ($urandom_range(1, 3)) @(negedge clk);
    end
    $finish;
  end
endmodule
